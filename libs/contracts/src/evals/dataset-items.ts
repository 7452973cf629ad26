import { z } from 'zod';
import { operation } from '../operation';
import { createOperation, deleteOperation, getOperation, listOperation, updateOperation } from '../record-operations';
import { Rid, ProjectPath, Pagination } from '../common';
import { text } from '../text';

/** A chat message of a dataset item (upstream shape `{role, content}`). */
export const DatasetMessage = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: text({ max: 100_000 }),
});

/** `input` is `{messages: [{role, content}]}` (at least one message); other keys are kept as given. */
export const DatasetItemInput = z.object({ messages: z.array(DatasetMessage).min(1).max(200) }).catchall(z.unknown());

export const DatasetItem = z.object({
  id: z.string(),
  datasetId: z.string(),
  input: DatasetItemInput,
  expectedOutput: z.array(DatasetMessage).nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type DatasetItem = z.infer<typeof DatasetItem>;

export const DatasetItemCreate = z.strictObject({
  id: Rid.optional().describe('Generated when absent'),
  input: DatasetItemInput,
  expectedOutput: z.array(DatasetMessage).max(200).nullable().optional(),
});
export type DatasetItemCreate = z.infer<typeof DatasetItemCreate>;

export const DatasetItemUpdate = z
  .strictObject({
    input: DatasetItemInput.optional(),
    expectedOutput: z.array(DatasetMessage).max(200).nullable().optional(),
  })
  .refine((b) => b.input !== undefined || b.expectedOutput !== undefined, {
    message: 'give input or expectedOutput',
    path: ['input'],
  });
export type DatasetItemUpdate = z.infer<typeof DatasetItemUpdate>;

export const DATASET_BULK_MAX = 100;

const createJsonSchema = (() => {
  const js = z.toJSONSchema(DatasetItemCreate, { io: 'input', target: 'draft-2020-12' }) as Record<string, unknown>;
  delete js.$schema;
  return js;
})();

/** Each item is checked on its own by the service (valid items stored, invalid ones reported). */
export const DatasetItemBulkCreate = z
  .array(z.unknown())
  .min(1)
  .max(DATASET_BULK_MAX)
  .meta({ items: createJsonSchema, description: `1 to ${DATASET_BULK_MAX} dataset item create bodies` });

export const DatasetItemBulkError = z.object({
  index: z.number().int().describe('Position of the item in the request array'),
  message: z.string(),
});
export const DatasetItemBulkReply = z.object({
  data: z.array(DatasetItem),
  pagination: Pagination,
  errors: z.array(DatasetItemBulkError),
});

export const DatasetPath = ProjectPath.extend({ datasetId: Rid });
export const DatasetItemPath = DatasetPath.extend({ itemId: Rid });

const tags = ['Evaluations'];
const base = '/manage/tenants/{tenantId}/projects/{projectId}/evals/dataset-items/{datasetId}';
/** The problems a dataset-item operation answers. */
const itemErrors = [400, 401, 403, 404, 500];

export const listDatasetItems = listOperation({
  operationId: 'listDatasetItems',
  summary: 'List the items of a dataset, oldest first',
  description: 'A dataset exists through its items: an unknown datasetId lists nothing (200 with an empty page).',
  tags,
  path: base,
  service: 'evals',
  subject: 'svc.evals.dataset-items.list',
  auth: 'manage',
  permission: 'view',
  params: DatasetPath,
  item: DatasetItem,
  errors: itemErrors,
});

export const createDatasetItem = createOperation({
  operationId: 'createDatasetItem',
  summary: 'Add an item to a dataset',
  description: '409 when the id is already used in this dataset.',
  tags,
  path: `${base}/items`,
  service: 'evals',
  subject: 'svc.evals.dataset-items.create',
  auth: 'manage',
  permission: 'edit',
  params: DatasetPath,
  body: DatasetItemCreate,
  item: DatasetItem,
  errors: [400, 401, 403, 409, 422, 500],
});

export const createDatasetItemsBulk = operation({
  operationId: 'createDatasetItemsBulk',
  summary: 'Add many items to a dataset; valid items are stored, invalid ones reported',
  description:
    '201 when at least one item was stored: `data` holds the stored items (with `pagination` over them), `errors` one entry per rejected item (`index` in the request array). 422 problem when no item could be stored.',
  tags,
  method: 'post',
  path: `${base}/items/bulk`,
  service: 'evals',
  subject: 'svc.evals.dataset-items.bulk-create',
  auth: 'manage',
  permission: 'edit',
  params: DatasetPath,
  body: DatasetItemBulkCreate,
  reply: { status: 201, body: DatasetItemBulkReply },
  errors: [400, 401, 403, 422, 500],
});

export const getDatasetItem = getOperation({
  operationId: 'getDatasetItem',
  summary: 'Get a dataset item',
  tags,
  path: `${base}/items/{itemId}`,
  service: 'evals',
  subject: 'svc.evals.dataset-items.get',
  auth: 'manage',
  permission: 'view',
  params: DatasetItemPath,
  item: DatasetItem,
  errors: itemErrors,
});

export const updateDatasetItem = updateOperation({
  operationId: 'updateDatasetItem',
  summary: 'Change a dataset item (addition)',
  tags,
  path: `${base}/items/{itemId}`,
  service: 'evals',
  subject: 'svc.evals.dataset-items.update',
  auth: 'manage',
  permission: 'edit',
  params: DatasetItemPath,
  body: DatasetItemUpdate,
  item: DatasetItem,
  errors: [400, 401, 403, 404, 422, 500],
  addition: true,
});

export const deleteDatasetItem = deleteOperation({
  operationId: 'deleteDatasetItem',
  summary: 'Delete a dataset item (addition)',
  tags,
  path: `${base}/items/{itemId}`,
  service: 'evals',
  subject: 'svc.evals.dataset-items.delete',
  auth: 'manage',
  permission: 'edit',
  params: DatasetItemPath,
  reply: { status: 204, description: 'Deleted' },
  errors: itemErrors,
  addition: true,
});
