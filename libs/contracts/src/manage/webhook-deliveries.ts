import { z } from 'zod';
import { operation } from '../operation';
import { IdPath, ListQuery, listReply, dataReply } from '../common';

/**
 * Operations served by the webhook dispatcher (it owns delivery records): the delivery log of a destination and
 * a signed test delivery. Both answer 404 when the destination does not exist in the project.
 */

export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'delivered', 'failed', 'cancelled'] as const;
export const WebhookDeliveryStatus = z.enum(WEBHOOK_DELIVERY_STATUSES);

export const WebhookDeliveryAttempt = z.object({
  attempt: z.number().int().describe('1 for the first try'),
  at: z.string().describe('When the attempt started (ISO 8601)'),
  statusCode: z.number().int().nullable().describe('HTTP status the receiver answered; null when no answer (refused, network error, timeout, chat channel)'),
  ok: z.boolean(),
  error: z.string().nullable().describe('Why the attempt failed, in words'),
  durationMs: z.number().int().describe('Latency of the attempt'),
});

export const WebhookDelivery = z.object({
  id: z.string().describe('The `webhook-id` header: the same on every attempt of this delivery'),
  destinationId: z.string(),
  eventId: z.string().describe('Id of the platform event delivered (for `test`, the test id)'),
  eventType: z.string(),
  status: WebhookDeliveryStatus.describe('pending: more attempts scheduled; delivered; failed: no more attempts; cancelled: the destination was disabled or deleted first'),
  attemptCount: z.number().int(),
  nextAttemptAt: z.string().nullable().describe('When the next retry is due (pending only)'),
  lastStatusCode: z.number().int().nullable(),
  lastError: z.string().nullable(),
  attempts: z.array(WebhookDeliveryAttempt),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

const tags = ['Webhook destinations'];
const base = '/manage/tenants/{tenantId}/projects/{projectId}/webhook-destinations/{id}';

export const listWebhookDeliveries = operation({
  operationId: 'listWebhookDeliveries',
  summary: 'Delivery log of a webhook destination',
  description: 'Deliveries newest first, each with its attempts (status, latency, error) and the time of the next retry.',
  tags,
  method: 'get',
  path: `${base}/deliveries`,
  service: 'webhook-dispatcher',
  subject: 'svc.webhook-dispatcher.deliveries.list',
  auth: 'manage',
  permission: 'view',
  params: IdPath,
  query: ListQuery.extend({ status: WebhookDeliveryStatus.optional(), eventType: z.string().min(1).max(255).optional() }),
  reply: { status: 200, body: listReply(WebhookDelivery) },
  errors: [400, 401, 403, 404, 500],
  addition: true,
});

export const WebhookTestResult = z.object({
  success: z.boolean(),
  deliveryId: z.string().describe('The `webhook-id` of the test delivery (also in the delivery log)'),
  statusCode: z.number().int().nullable(),
  error: z.string().nullable(),
  durationMs: z.number().int(),
});

export const testWebhookDestination = operation({
  operationId: 'testWebhookDestination',
  summary: 'Send a signed test event to a webhook destination',
  description:
    'Sends one `test` event, signed like every delivery, and answers with the outcome (200 either way; `success` says whether the receiver answered 2xx). Not retried; works on disabled destinations too; never changes the destination.',
  tags,
  method: 'post',
  path: `${base}/test`,
  service: 'webhook-dispatcher',
  subject: 'svc.webhook-dispatcher.deliveries.test',
  auth: 'manage',
  permission: 'edit',
  params: IdPath,
  reply: { status: 200, body: dataReply(WebhookTestResult) },
  errors: [400, 401, 403, 404, 500, 503],
});
