import { z } from 'zod';
import { operation } from '../operation';
import { createOperation, deleteOperation, getOperation, listOperation, updateOperation } from '../record-operations';
import { Rid, ProjectPath, IdPath, ListQuery, IsoDateTime } from '../common';
import { text } from '../text';

export const FeedbackType = z.enum(['positive', 'negative']);
export type FeedbackType = z.infer<typeof FeedbackType>;

export const Feedback = z.object({
  id: z.string(),
  conversationId: z.string(),
  messageId: z.string().nullable(),
  agentId: z.string().nullable(),
  type: FeedbackType,
  details: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Feedback = z.infer<typeof Feedback>;

const Details = text({ max: 10000 });

export const FeedbackCreate = z.strictObject({
  id: Rid.optional().describe('Generated when absent'),
  conversationId: Rid,
  messageId: Rid.nullable().optional(),
  type: FeedbackType,
  details: Details.nullable().optional(),
  agentId: text({ min: 1, max: 256 })
    .nullable()
    .optional()
    .describe('The agent of the conversation (addition: feeds the agentId filter and webhook agent scoping)'),
});
export type FeedbackCreate = z.infer<typeof FeedbackCreate>;

export const FeedbackUpdate = z.strictObject({
  type: FeedbackType.optional(),
  details: Details.nullable().optional(),
});
export type FeedbackUpdate = z.infer<typeof FeedbackUpdate>;

/** Most items one bulk request may carry. */
export const FEEDBACK_BULK_MAX = 100;

const feedbackCreateJsonSchema = (() => {
  const js = z.toJSONSchema(FeedbackCreate, { io: 'input', target: 'draft-2020-12' }) as Record<string, unknown>;
  delete js.$schema;
  return js;
})();

/**
 * A JSON array of create bodies. Each item is checked on its own by the service (valid items are stored,
 * invalid ones reported), so the gateway only checks that this is an array of 1 to 100 items.
 */
export const FeedbackBulkCreate = z
  .array(z.unknown())
  .min(1)
  .max(FEEDBACK_BULK_MAX)
  .meta({ items: feedbackCreateJsonSchema, description: `1 to ${FEEDBACK_BULK_MAX} feedback create bodies` });

export const FeedbackBulkError = z.object({
  index: z.number().int().describe('Position of the item in the request array'),
  conversationId: z.string().nullable().describe("The item's conversationId when it had a string one"),
  message: z.string(),
});

export const FeedbackBulkReply = z.object({ data: z.array(Feedback), errors: z.array(FeedbackBulkError) });

export const FeedbackListQuery = ListQuery.extend({
  conversationId: Rid.optional(),
  messageId: Rid.optional(),
  agentId: z.string().min(1).max(256).optional(),
  type: FeedbackType.optional(),
  startDate: IsoDateTime.optional().describe(
    'Created on or after this time (ISO 8601 date-time with offset, inclusive)',
  ),
  endDate: IsoDateTime.optional().describe(
    'Created on or before this time (ISO 8601 date-time with offset, inclusive)',
  ),
}).refine((q) => !q.startDate || !q.endDate || Date.parse(q.startDate) <= Date.parse(q.endDate), {
  message: 'startDate must not be after endDate',
  path: ['startDate'],
});
export type FeedbackListQuery = z.infer<typeof FeedbackListQuery>;

const tags = ['Feedback'];
const base = '/manage/tenants/{tenantId}/projects/{projectId}/feedback';
/** The problems a feedback operation answers (a write to the project also 409, see `operation()`). */
const feedbackErrors = [400, 401, 403, 404, 422, 500];

export const listFeedback = listOperation({
  operationId: 'listFeedback',
  summary: 'List feedback, newest first',
  tags,
  path: base,
  service: 'management',
  subject: 'svc.management.feedback.list',
  auth: 'manage',
  permission: 'view',
  params: ProjectPath,
  query: FeedbackListQuery,
  item: Feedback,
  errors: feedbackErrors,
});

export const createFeedback = createOperation({
  operationId: 'createFeedback',
  summary: 'Record feedback on a conversation or message',
  description: 'Emits `feedback.created`. 409 when the id is already used in this project.',
  tags,
  path: base,
  service: 'management',
  subject: 'svc.management.feedback.create',
  auth: 'manage',
  permission: 'edit',
  params: ProjectPath,
  body: FeedbackCreate,
  item: Feedback,
  errors: [400, 401, 403, 409, 422, 500],
});

export const createFeedbackBulk = operation({
  operationId: 'createFeedbackBulk',
  summary: 'Record many feedback items; valid items are stored, invalid ones reported',
  description:
    '201 when at least one item was stored: `data` holds the stored items, `errors` one entry per rejected item (`index` in the request array). 422 problem when no item could be stored (one `errors` pointer per problem, e.g. `/2/type`). Each stored item emits `feedback.created`.',
  tags,
  method: 'post',
  path: `${base}/bulk`,
  service: 'management',
  subject: 'svc.management.feedback.bulk-create',
  auth: 'manage',
  permission: 'edit',
  params: ProjectPath,
  body: FeedbackBulkCreate,
  reply: { status: 201, body: FeedbackBulkReply },
  errors: [400, 401, 403, 422, 500],
});

export const getFeedback = getOperation({
  operationId: 'getFeedback',
  summary: 'Get feedback',
  tags,
  path: `${base}/{id}`,
  service: 'management',
  subject: 'svc.management.feedback.get',
  auth: 'manage',
  permission: 'view',
  params: IdPath,
  item: Feedback,
  errors: feedbackErrors,
});

export const updateFeedback = updateOperation({
  operationId: 'updateFeedback',
  summary: 'Change the type or details of feedback',
  tags,
  path: `${base}/{id}`,
  service: 'management',
  subject: 'svc.management.feedback.update',
  auth: 'manage',
  permission: 'edit',
  params: IdPath,
  body: FeedbackUpdate,
  item: Feedback,
  errors: feedbackErrors,
});

export const deleteFeedback = deleteOperation({
  operationId: 'deleteFeedback',
  summary: 'Delete feedback',
  tags,
  path: `${base}/{id}`,
  service: 'management',
  subject: 'svc.management.feedback.delete',
  auth: 'manage',
  permission: 'edit',
  params: IdPath,
  reply: { status: 204, description: 'Deleted' },
  errors: feedbackErrors,
});
