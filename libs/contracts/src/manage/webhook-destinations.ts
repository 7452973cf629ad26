import { z } from 'zod';
import { operation } from '../operation';
import { createOperation, deleteOperation, getOperation, listOperation, updateOperation } from '../record-operations';
import { Rid, ProjectPath, IdPath, ListQuery, dataReply, HeaderMap } from '../common';

/** Event types a destination can subscribe to (families: conversation, feedback, event.created, evaluation.failed, agent.updated, agent.deleted, trigger.invoked). */
export const WEBHOOK_EVENT_TYPES = [
  'conversation.created',
  'conversation.updated',
  'conversation.execution.error',
  'conversation.generation.error',
  'conversation.tool.error',
  'conversation.context.error',
  'feedback.created',
  'event.created',
  'evaluation.failed',
  'agent.updated',
  'agent.deleted',
  'trigger.invoked',
] as const;
export const WebhookEventType = z.enum(WEBHOOK_EVENT_TYPES);

export const WebhookDestination = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  enabled: z.boolean(),
  eventTypes: z.array(z.string()),
  agentIds: z.array(z.string()),
  evaluatorIds: z.array(z.string()),
  headers: z.record(z.string(), z.string()),
  url: z.string().nullable(),
  chatappChannelId: z.string().nullable(),
  disabledReason: z
    .string()
    .nullable()
    .describe(
      'Why delivery turned the destination off (a 410 Gone answer, or failing for days); null when enabled or turned off by a user',
    ),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type WebhookDestination = z.infer<typeof WebhookDestination>;

/** The create reply (and only it) carries the signing secret, once. */
export const WebhookDestinationWithSecret = WebhookDestination.extend({
  secret: z.string().describe('Standard Webhooks signing secret (`whsec_` + base64 key); shown once, store it now'),
});
export type WebhookDestinationWithSecret = z.infer<typeof WebhookDestinationWithSecret>;

const Url = z
  .url({ protocol: /^https?$/, message: 'must be an http or https URL' })
  .max(2048)
  .refine(
    (u) => {
      try {
        const p = new URL(u);
        return !p.username && !p.password;
      } catch {
        return false;
      }
    },
    { message: 'must not carry user:password' },
  );

const fields = {
  name: z.string().min(1).max(256),
  description: z.string().max(2000).nullable(),
  enabled: z.boolean(),
  eventTypes: z.array(WebhookEventType).min(1),
  agentIds: z.array(Rid),
  evaluatorIds: z.array(Rid),
  headers: HeaderMap,
  url: Url,
  chatappChannelId: z
    .string()
    .min(1)
    .max(255)
    .regex(/^[A-Z0-9]+$/, 'must be a chat channel id (uppercase letters and digits)'),
};

export const WebhookDestinationCreate = z
  .strictObject({
    id: Rid.optional(),
    name: fields.name,
    description: fields.description.optional(),
    enabled: fields.enabled.default(true),
    eventTypes: fields.eventTypes,
    agentIds: fields.agentIds.optional(),
    evaluatorIds: fields.evaluatorIds.optional(),
    headers: fields.headers.optional(),
    url: fields.url.optional(),
    chatappChannelId: fields.chatappChannelId.optional(),
  })
  .refine((b) => (b.url === undefined) !== (b.chatappChannelId === undefined), {
    message: 'give exactly one of url and chatappChannelId',
    path: ['url'],
  });
export type WebhookDestinationCreate = z.infer<typeof WebhookDestinationCreate>;

export const WebhookDestinationUpdate = z
  .strictObject({
    name: fields.name.optional(),
    description: fields.description.optional(),
    enabled: fields.enabled.optional(),
    eventTypes: fields.eventTypes.optional(),
    agentIds: fields.agentIds.optional(),
    evaluatorIds: fields.evaluatorIds.optional(),
    headers: fields.headers.optional(),
    url: fields.url.nullable().optional(),
    chatappChannelId: fields.chatappChannelId.nullable().optional(),
  })
  .refine((b) => !(typeof b.url === 'string' && typeof b.chatappChannelId === 'string'), {
    message: 'give at most one of url and chatappChannelId',
    path: ['url'],
  });
export type WebhookDestinationUpdate = z.infer<typeof WebhookDestinationUpdate>;

const tags = ['Webhook destinations'];
const base = '/manage/tenants/{tenantId}/projects/{projectId}/webhook-destinations';
/** The problems a destination operation answers (a write to the project also 409, see `operation()`). */
const destinationErrors = [400, 401, 403, 404, 422, 500];

export const listWebhookDestinations = listOperation({
  operationId: 'listWebhookDestinations',
  summary: 'List webhook destinations',
  tags,
  path: base,
  service: 'management',
  subject: 'svc.management.webhook-destinations.list',
  auth: 'manage',
  permission: 'view',
  params: ProjectPath,
  query: ListQuery.extend({ agentId: Rid.optional() }),
  item: WebhookDestination,
  errors: destinationErrors,
});

export const createWebhookDestination = createOperation({
  operationId: 'createWebhookDestination',
  summary: 'Create a webhook destination',
  tags,
  path: base,
  service: 'management',
  subject: 'svc.management.webhook-destinations.create',
  auth: 'manage',
  permission: 'edit',
  params: ProjectPath,
  body: WebhookDestinationCreate,
  item: WebhookDestinationWithSecret,
  errors: destinationErrors,
});

export const getWebhookDestination = getOperation({
  operationId: 'getWebhookDestination',
  summary: 'Get a webhook destination',
  tags,
  path: `${base}/{id}`,
  service: 'management',
  subject: 'svc.management.webhook-destinations.get',
  auth: 'manage',
  permission: 'view',
  params: IdPath,
  item: WebhookDestination,
  errors: destinationErrors,
});

export const updateWebhookDestination = updateOperation({
  operationId: 'updateWebhookDestination',
  summary: 'Update a webhook destination',
  tags,
  path: `${base}/{id}`,
  service: 'management',
  subject: 'svc.management.webhook-destinations.update',
  auth: 'manage',
  permission: 'edit',
  params: IdPath,
  body: WebhookDestinationUpdate,
  item: WebhookDestination,
  errors: destinationErrors,
});

export const deleteWebhookDestination = deleteOperation({
  operationId: 'deleteWebhookDestination',
  summary: 'Delete a webhook destination',
  tags,
  path: `${base}/{id}`,
  service: 'management',
  subject: 'svc.management.webhook-destinations.delete',
  auth: 'manage',
  permission: 'edit',
  params: IdPath,
  errors: destinationErrors,
});

export const WebhookSecretRotate = z
  .strictObject({
    graceSeconds: z
      .number()
      .int()
      .min(0)
      .max(7 * 24 * 3600)
      .optional()
      .describe(
        'How long the previous secret keeps signing next to the new one (default 24 hours; 0 retires it at once)',
      ),
  })
  .optional();
export type WebhookSecretRotate = z.infer<typeof WebhookSecretRotate>;

export const WebhookSecretRotation = z.object({
  id: z.string(),
  secret: z.string().describe('The new signing secret; shown once'),
  previousSecretExpiresAt: z.string().nullable().describe('Until then deliveries carry signatures by both secrets'),
});

export const rotateWebhookDestinationSecret = operation({
  operationId: 'rotateWebhookDestinationSecret',
  summary: 'Rotate the signing secret of a webhook destination',
  description:
    'Issues a new `whsec_` signing secret and returns it once. During the grace period every delivery carries two `v1,` signatures (new and previous secret) in `webhook-signature`, so receivers can switch without losing a delivery.',
  tags,
  method: 'post',
  path: `${base}/{id}/rotate-secret`,
  service: 'management',
  subject: 'svc.management.webhook-destinations.rotate-secret',
  auth: 'manage',
  permission: 'edit',
  params: IdPath,
  body: WebhookSecretRotate,
  reply: { status: 200, body: dataReply(WebhookSecretRotation) },
  errors: destinationErrors,
  addition: true,
});

/** Internal call `listDestinationsForDispatch`: the dispatcher asks for the destinations of a project when its projection is cold. */
export const ListDestinationsForDispatchRequest = ProjectPath;

/**
 * The record a destination's sealed signing secrets are bound to (libs/secrets SealedBinding): management seals them
 * for it and the dispatcher opens them with it, so a secret copied onto another destination does not open there.
 */
export const webhookSecretBinding = (d: { tenantId: string; projectId: string; id: string }) => ({
  tenantId: d.tenantId,
  collection: 'webhookDestinations',
  recordId: `${d.projectId}/${d.id}`,
});

/** A destination as the dispatcher sees it: the public record plus its sealed signing secrets (SecretBox, ENCRYPTION_KEYS). */
export const DispatchDestination = WebhookDestination.extend({
  tenantId: z.string(),
  projectId: z.string(),
  sealedSecret: z.string().nullable(),
  sealedPreviousSecret: z.string().nullable(),
  previousSecretExpiresAt: z.string().nullable(),
});
export type DispatchDestination = z.infer<typeof DispatchDestination>;
export const ListDestinationsForDispatchReply = z.object({ destinations: z.array(DispatchDestination) });

/**
 * Internal call `disableDestinationForDelivery`: the dispatcher turns a destination off (the receiver answered 410 Gone,
 * or it kept failing for days). Management sets `enabled: false` with the reason and emits `webhook-destination.updated`.
 * Idempotent; an unknown (deleted) destination is answered ok.
 */
export const DisableDestinationForDeliveryRequest = z.object({
  tenantId: z.string(),
  projectId: z.string(),
  id: z.string(),
  reason: z.string().min(1).max(1000),
});
export const DisableDestinationForDeliveryReply = z.object({ disabled: z.boolean() });

/**
 * Payload of the `webhookDestinationsChanged` notice (core NATS, not stored), published by management after a
 * destination of a project was created, changed or deleted, before the change is answered: `{tenantId, projectId}`. The dispatcher drops its copy of the project's
 * destinations on it, so an event accepted after the answer is routed with the change. (The `webhook-destination.*`
 * events are the durable record; they are published after the answer, so they cannot promise that.)
 */
export const DestinationsChanged = z.object({ tenantId: z.string(), projectId: z.string() });
export type DestinationsChanged = z.infer<typeof DestinationsChanged>;
