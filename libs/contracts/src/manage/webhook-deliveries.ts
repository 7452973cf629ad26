import { z } from 'zod';
import { operation } from '../operation';
import { getOperation, listOperation } from '../record-operations';
import { IdPath, IsoDateTime, ListQuery, Rid, dataReply } from '../common';

/**
 * Operations served by the webhook dispatcher (it owns delivery records): the delivery log of a destination and
 * a signed test delivery. Both answer 404 when the destination does not exist in the project.
 */

export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'delivered', 'failed', 'cancelled'] as const;
export const WebhookDeliveryStatus = z.enum(WEBHOOK_DELIVERY_STATUSES);

export const WebhookDeliveryAttempt = z.object({
  attempt: z.number().int().describe('1 for the first try'),
  at: z.string().describe('When the attempt started (ISO 8601)'),
  statusCode: z
    .number()
    .int()
    .nullable()
    .describe('HTTP status the receiver answered; null when no answer (refused, network error, timeout, chat channel)'),
  ok: z.boolean(),
  error: z.string().nullable().describe('Why the attempt failed, in words'),
  durationMs: z.number().int().describe('Latency of the attempt'),
  manual: z
    .boolean()
    .nullable()
    .optional()
    .describe('true when a person asked for this attempt (redeliver or recover)'),
});

export const WebhookDelivery = z.object({
  id: z.string().describe('The `webhook-id` header: the same on every attempt of this delivery'),
  destinationId: z.string(),
  eventId: z.string().describe('Id of the platform event delivered (for `test`, the test id)'),
  eventType: z.string(),
  runEventId: z
    .string()
    .nullable()
    .describe(
      'For `event.created` deliveries: the id of the run event posted to POST /run/v1/events (`data.event.id`); null for other event types and for deliveries logged before this field existed',
    ),
  status: WebhookDeliveryStatus.describe(
    'pending: more attempts scheduled; delivered; failed: no more attempts; cancelled: the destination was disabled or deleted first',
  ),
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
/** The problems a read of a destination's deliveries answers. */
const deliveryErrors = [400, 401, 403, 404, 500];

export const listWebhookDeliveries = listOperation({
  operationId: 'listWebhookDeliveries',
  summary: 'Delivery log of a webhook destination',
  description:
    'Deliveries newest first, each with its attempts (status, latency, error) and the time of the next retry. `runEventId` narrows the log to the deliveries of one run event (the `id` a caller gave or got from POST /run/v1/events).',
  tags,
  path: `${base}/deliveries`,
  service: 'webhook-dispatcher',
  subject: 'svc.webhook-dispatcher.deliveries.list',
  auth: 'manage',
  permission: 'view',
  params: IdPath,
  query: ListQuery.extend({
    status: WebhookDeliveryStatus.optional(),
    eventType: z.string().min(1).max(255).optional(),
    runEventId: z
      .string()
      .min(1)
      .max(255)
      .optional()
      .describe('Only the deliveries of this run event (its id from POST /run/v1/events)'),
  }),
  item: WebhookDelivery,
  errors: deliveryErrors,
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

export const WebhookDeliveryPath = IdPath.extend({ deliveryId: Rid.describe('The delivery id (its `webhook-id`)') });

export const redeliverWebhookDelivery = operation({
  operationId: 'redeliverWebhookDelivery',
  summary: 'Send a delivery again',
  description:
    'Queues one more attempt of a `failed`, `cancelled` or `delivered` delivery at once, with the same `webhook-id` (a receiver that deduplicates sees the same message) and a fresh signature. The attempt appears in the delivery log marked `manual`; the delivery is `pending` until it is made. A delivery already pending answers 409; a disabled destination answers 409 (enable it first).',
  tags,
  method: 'post',
  path: `${base}/deliveries/{deliveryId}/redeliver`,
  service: 'webhook-dispatcher',
  subject: 'svc.webhook-dispatcher.deliveries.redeliver',
  auth: 'manage',
  permission: 'edit',
  params: WebhookDeliveryPath,
  reply: { status: 202, body: dataReply(WebhookDelivery) },
  errors: [400, 401, 403, 404, 409, 500, 503],
  addition: true,
});

export const WebhookRecoverBody = z
  .strictObject({
    since: IsoDateTime.describe('Deliveries created at or after this time (ISO 8601 date-time with offset)'),
    until: IsoDateTime.optional().describe('…and before this time (default: now)'),
  })
  .refine((b) => b.until === undefined || Date.parse(b.until) > Date.parse(b.since), {
    message: 'until must be after since',
    path: ['until'],
  });

export const WebhookRecoverResult = z.object({
  scheduled: z.number().int().describe('Deliveries queued to be sent again by this call'),
  more: z
    .boolean()
    .describe(
      'true when more deliveries matched than one call queues (WEBHOOK_RECOVER_MAX_PER_CALL): call again to queue the rest',
    ),
});

export const recoverWebhookDeliveries = operation({
  operationId: 'recoverWebhookDeliveries',
  summary: 'Send again every failed or cancelled delivery of a time window',
  description:
    'Queues one more attempt (marked `manual`, same `webhook-id`) of every `failed` or `cancelled` delivery of the destination created in `[since, until)`. Each is queued once: a queued delivery is `pending` until its attempt is made, so calling again while they are pending queues nothing twice. `since` may not be older than the delivery log keeps deliveries (WEBHOOK_LOG_RETENTION_DAYS, 30 days by default): such a window is refused with 422.',
  tags,
  method: 'post',
  path: `${base}/recover`,
  service: 'webhook-dispatcher',
  subject: 'svc.webhook-dispatcher.deliveries.recover',
  auth: 'manage',
  permission: 'edit',
  params: IdPath,
  body: WebhookRecoverBody,
  reply: { status: 202, body: dataReply(WebhookRecoverResult) },
  errors: [400, 401, 403, 404, 409, 422, 500, 503],
  addition: true,
});

const StatusCounts = z.object({
  delivered: z.number().int(),
  failed: z.number().int(),
  pending: z.number().int(),
  cancelled: z.number().int(),
});

export const WebhookStatsWindow = z.object({
  counts: StatusCounts.describe('Deliveries created in the window, by their status now'),
  successRate: z
    .number()
    .nullable()
    .describe('delivered / (delivered + failed) of those deliveries, 0 to 1; null when none has finished'),
  attempts: z.number().int().describe('Attempts made in the window'),
  attemptDurationMs: z
    .object({ p50: z.number().int().nullable(), p99: z.number().int().nullable() })
    .describe(
      'Attempt latency percentiles, estimated from a histogram (accurate to its bucket); null without attempts',
    ),
});

export const WebhookStats = z.object({
  destinationId: z.string(),
  lastHour: WebhookStatsWindow,
  lastDay: WebhookStatsWindow,
  lastWeek: WebhookStatsWindow,
});
export type WebhookStats = z.infer<typeof WebhookStats>;

export const getWebhookDestinationStats = getOperation({
  operationId: 'getWebhookDestinationStats',
  summary: 'Delivery statistics of a webhook destination',
  description:
    'Counts by status, success rate and attempt latency (p50/p99) for the last hour, day and week, read from counters kept as deliveries change (5-minute resolution; the counters are written every few seconds, so the newest changes may take that long to show).',
  tags,
  path: `${base}/stats`,
  service: 'webhook-dispatcher',
  subject: 'svc.webhook-dispatcher.deliveries.stats',
  auth: 'manage',
  permission: 'view',
  params: IdPath,
  item: WebhookStats,
  errors: deliveryErrors,
  addition: true,
});
