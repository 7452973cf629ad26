import { z } from 'zod';
import { operation } from '../operation';
import { JsonObject, dataReply } from '../common';

export const RunEventCreate = z.strictObject({
  type: z.string().min(1).max(256),
  id: z
    .string()
    .min(1)
    .max(255)
    .regex(/^[^\u0000-\u001f\u007f]+$/, 'must not contain control characters')
    .optional(),
  agentId: z.string().min(1).max(255).optional(),
  conversationId: z.string().min(1).max(255).optional(),
  messageId: z.string().min(1).max(255).optional(),
  properties: JsonObject.optional(),
  userProperties: JsonObject.nullable().optional(),
  metadata: JsonObject.optional(),
});
export type RunEventCreate = z.infer<typeof RunEventCreate>;

export const RunEvent = z.object({
  id: z.string(),
  tenantId: z.string(),
  projectId: z.string(),
  type: z.string(),
  agentId: z.string().nullable(),
  conversationId: z.string().nullable(),
  messageId: z.string().nullable(),
  properties: JsonObject.nullable(),
  userProperties: JsonObject.nullable(),
  metadata: JsonObject.nullable(),
  serverMetadata: z.object({ authMethod: z.string() }).catchall(z.unknown()),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type RunEvent = z.infer<typeof RunEvent>;

export const createRunEvent = operation({
  operationId: 'createRunEvent',
  // A known id answers the stored row (200): repeating it never stores twice.
  repeat: 'with-id',
  summary: 'Record an event (idempotent by client id)',
  description: '201 when a new row is inserted; 200 with the original row when the id already exists for the project.',
  tags: ['Run events'],
  method: 'post',
  path: '/run/v1/events',
  service: 'events-ingest',
  subject: 'svc.events-ingest.events.create',
  auth: 'run',
  body: RunEventCreate,
  reply: { status: 201, body: dataReply(RunEvent), description: 'Created' },
  extraReplies: [
    {
      status: 200,
      description: 'The event already existed; the original row is returned unchanged',
      body: dataReply(RunEvent),
    },
  ],
  errors: [400, 401, 403, 422, 500],
  rateLimit: 'run',
});
