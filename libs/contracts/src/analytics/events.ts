import { z } from 'zod';
import { operation } from '../operation';
import { dataReply, IsoDateTime, JsonObject } from '../common';

/** Largest accepted body of `POST {analytics_url}/events`: 2 MB (2,097,152 bytes). */
export const ANALYTICS_BODY_LIMIT_BYTES = 2 * 1024 * 1024;

export const ANALYTICS_ENTITY_TYPES = ['message', 'conversation', 'search'] as const;
export const AnalyticsEntityType = z.enum(ANALYTICS_ENTITY_TYPES);
export type AnalyticsEntityType = z.infer<typeof AnalyticsEntityType>;

/** A non-empty string without NUL characters (which not every Mongo-wire server can store). */
const Text = z
  .string()
  .min(1)
  .regex(/^[^\u0000]*$/, 'must not contain NUL characters');

const IdOrNumber = z.union([z.string(), z.number()]);

/** Caller-trusted attribution; the named members are conventions, anything else is kept as given. */
export const AnalyticsUserProperties = z.looseObject({
  id: IdOrNumber.optional(),
  identificationType: z.string().optional().describe('For example COOKIED'),
  userId: IdOrNumber.optional(),
  supportAgentName: z.string().optional(),
  userType: z.string().optional(),
});

const EventId = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[^\u0000-\u001f\u007f]+$/, 'must not contain control characters')
  .describe('Client id; a retry with the same id stores nothing new');

/** Fields every shape may carry. */
const common = {
  type: Text.max(256).describe('Free-form event name'),
  id: EventId.optional(),
  createdAt: IsoDateTime.nullable()
    .optional()
    .describe('ISO 8601 with a timezone; the current time when omitted or null'),
  projectId: z.string().nullable().optional().describe("Must equal the key's project when given"),
  integrationId: z.string().nullable().optional().describe("Must equal the key's integration when given"),
  properties: JsonObject.nullable().optional(),
  userProperties: AnalyticsUserProperties.nullable().optional(),
};

export const AnalyticsEventCreate = z.discriminatedUnion('entityType', [
  z.strictObject({ entityType: z.literal('message'), messageId: Text, ...common }),
  z.strictObject({ entityType: z.literal('conversation'), conversationId: Text, ...common }),
  z.strictObject({ entityType: z.literal('search'), searchQuery: Text, ...common }),
]);
export type AnalyticsEventCreate = z.infer<typeof AnalyticsEventCreate>;

const stored = {
  id: z.string(),
  type: z.string(),
  createdAt: z.string(),
  projectId: z.string(),
  integrationId: z.string().nullable(),
  properties: JsonObject.nullable(),
  userProperties: JsonObject.nullable(),
};

/** The stored event, as echoed by the ingest endpoint. */
export const AnalyticsEvent = z.discriminatedUnion('entityType', [
  z.object({ entityType: z.literal('message'), messageId: z.string(), ...stored }),
  z.object({ entityType: z.literal('conversation'), conversationId: z.string(), ...stored }),
  z.object({ entityType: z.literal('search'), searchQuery: z.string(), ...stored }),
]);
export type AnalyticsEvent = z.infer<typeof AnalyticsEvent>;

export const createAnalyticsEvent = operation({
  operationId: 'createAnalyticsEvent',
  // A known id answers the stored row (200): repeating it never stores twice.
  repeat: 'with-id',
  summary: 'Record an analytics event (message, conversation or search)',
  description:
    'Served on the analytics base URL ({analytics_url}), not the main API. Auth: `Authorization: Bearer ak_…` (an analytics key). ' +
    '201 when stored; 200 with the stored row, unchanged, when the `id` was already recorded for the project. ' +
    'Body at most 2 MB (413 beyond). 400 for malformed JSON or a body that does not validate (missing `type`, `entityType` or anchor); ' +
    "415 for a content type other than application/json; 422 for an unknown `entityType`; 403 when `projectId` or `integrationId` differ from the key's.",
  tags: ['Analytics'],
  method: 'post',
  path: '/events',
  service: 'analytics',
  subject: 'svc.analytics.events.create',
  auth: 'analytics',
  listener: 'analytics',
  body: AnalyticsEventCreate,
  bodyLimit: ANALYTICS_BODY_LIMIT_BYTES,
  reply: { status: 201, body: AnalyticsEvent, description: 'Stored' },
  extraReplies: [
    {
      status: 200,
      description: 'The id was already recorded; the stored row is returned unchanged',
      body: AnalyticsEvent,
    },
  ],
  errors: [400, 401, 403, 413, 415, 422, 500],
  rateLimit: 'analytics',
});

/** Most events in one `POST {analytics_url}/events/batch`. */
export const ANALYTICS_BATCH_MAX = 1000;

export const AnalyticsEventBatch = z.strictObject({
  events: z
    .array(AnalyticsEventCreate)
    .min(1)
    .max(ANALYTICS_BATCH_MAX)
    .describe(`1 to ${ANALYTICS_BATCH_MAX} events, each as the body of POST /events`),
});
export type AnalyticsEventBatch = z.infer<typeof AnalyticsEventBatch>;

/** What `POST /events` would have answered for one event of a batch. */
export const AnalyticsBatchItem = z.object({
  status: z
    .union([z.literal(201), z.literal(200)])
    .describe('201 stored now; 200 the id was already recorded (the stored row, unchanged)'),
  data: AnalyticsEvent,
});

export const createAnalyticsEventBatch = operation({
  operationId: 'createAnalyticsEventBatch',
  // Every event with an id answers its stored row when repeated: a batch whose events all carry ids never stores twice.
  repeat: 'with-id',
  summary: 'Record up to 1000 analytics events in one request',
  description:
    'Served on the analytics base URL ({analytics_url}), beside `POST /events`; the same key, rules and answers per event, stored ' +
    'together (one database write for many events). All or nothing on validation: when any event is invalid (400, with a pointer ' +
    'such as `/events/3/type`) or names another project or integration (403), nothing is stored. Otherwise 200 with `data`, one item per ' +
    'event, in order: `status` 201 (stored now) or 200 (its `id` was already recorded; the stored row, unchanged). Body at most 2 MB.',
  tags: ['Analytics'],
  method: 'post',
  path: '/events/batch',
  service: 'analytics',
  subject: 'svc.analytics.events.batch',
  auth: 'analytics',
  listener: 'analytics',
  body: AnalyticsEventBatch,
  bodyLimit: ANALYTICS_BODY_LIMIT_BYTES,
  reply: { status: 200, body: dataReply(z.array(AnalyticsBatchItem)), description: 'One item per event, in order' },
  errors: [400, 401, 403, 413, 415, 422, 500],
  rateLimit: 'analytics',
});
