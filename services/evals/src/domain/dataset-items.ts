import { DatasetItemCreate, type DatasetItem, type DatasetItemUpdate, type ProjectScope } from '@platform/contracts';
import { AppError, zodFieldErrors } from '@platform/problems';
import { randomId } from '@platform/secrets';
import type { DatasetItemRepo } from '../data/dataset-item.repo';

export interface DatasetItemDeps {
  items: DatasetItemRepo;
}

type DatasetScope = ProjectScope & { datasetId: string };

const notFound = (id: string) => new AppError('not_found', `Dataset item "${id}" not found`);

export async function addDatasetItem(
  deps: DatasetItemDeps,
  scope: DatasetScope,
  input: DatasetItemCreate,
): Promise<DatasetItem> {
  const now = new Date();
  const id = input.id ?? randomId(20);
  const created = await deps.items.insert({
    id,
    tenantId: scope.tenantId,
    projectId: scope.projectId,
    datasetId: scope.datasetId,
    input: JSON.stringify(input.input),
    expectedOutput: input.expectedOutput == null ? null : JSON.stringify(input.expectedOutput),
    createdAt: now,
    updatedAt: now,
  });
  if (!created)
    throw new AppError('conflict', `A dataset item with id "${id}" already exists in dataset "${scope.datasetId}"`);
  return created;
}

/** Each item is checked and stored on its own; the invalid ones are reported by index. None stored → 422. */
export async function addDatasetItemsBulk(deps: DatasetItemDeps, scope: DatasetScope, raw: unknown[]) {
  const stored: DatasetItem[] = [];
  const errors: Array<{ index: number; message: string }> = [];
  const pointers: Array<{ pointer: string; detail: string }> = [];
  for (const [index, item] of raw.entries()) {
    const parsed = DatasetItemCreate.safeParse(item);
    if (!parsed.success) {
      const fields = zodFieldErrors(parsed.error, '');
      errors.push({ index, message: fields.map((f) => `${f.pointer || '/'}: ${f.detail}`).join('; ') });
      for (const f of fields) pointers.push({ pointer: `/${index}${f.pointer}`, detail: f.detail });
      continue;
    }
    try {
      stored.push(await addDatasetItem(deps, scope, parsed.data));
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      errors.push({ index, message: err.message });
      pointers.push({ pointer: `/${index}/id`, detail: err.message });
    }
  }
  if (!stored.length) {
    throw new AppError(
      'unprocessable_entity',
      `No dataset item could be stored (${errors[0]?.message ?? 'no items'})`,
      { errors: pointers },
    );
  }
  return { data: stored, errors };
}

export async function findDatasetItem(deps: DatasetItemDeps, scope: DatasetScope, id: string): Promise<DatasetItem> {
  const item = await deps.items.findById(scope, scope.datasetId, id);
  if (!item) throw notFound(id);
  return item;
}

export async function changeDatasetItem(
  deps: DatasetItemDeps,
  scope: DatasetScope,
  id: string,
  change: DatasetItemUpdate,
): Promise<DatasetItem> {
  const set: { input?: string; expectedOutput?: string | null; updatedAt: Date } = { updatedAt: new Date() };
  if (change.input !== undefined) set.input = JSON.stringify(change.input);
  if (change.expectedOutput !== undefined)
    set.expectedOutput = change.expectedOutput === null ? null : JSON.stringify(change.expectedOutput);
  const item = await deps.items.update(scope, scope.datasetId, id, set);
  if (!item) throw notFound(id);
  return item;
}

export async function removeDatasetItem(deps: DatasetItemDeps, scope: DatasetScope, id: string): Promise<void> {
  if (!(await deps.items.remove(scope, scope.datasetId, id))) throw notFound(id);
}
