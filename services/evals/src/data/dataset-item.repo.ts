import type { DatasetItem, ProjectScope } from '@platform/contracts';
import { iso, scoped, type Connection, unlessDuplicate, listPage } from '@platform/mongo';
import { datasetItemModel, type DatasetItemDoc } from './dataset-item.model';

export const datasetItemKey = (scope: ProjectScope, datasetId: string, id: string) =>
  `${scope.tenantId}:${scope.projectId}:${datasetId}:${id}`;

export function toDatasetItem(d: DatasetItemDoc): DatasetItem {
  return {
    id: d.id,
    datasetId: d.datasetId,
    input: JSON.parse(d.input),
    expectedOutput: d.expectedOutput == null ? null : JSON.parse(d.expectedOutput),
    createdAt: iso(d.createdAt)!,
    updatedAt: iso(d.updatedAt)!,
  };
}

export type DatasetItemRepo = ReturnType<typeof datasetItemRepo>;

export function datasetItemRepo(db: Connection) {
  const Model = datasetItemModel(db);
  return {
    model: Model,
    /** Throws a duplicate-key error when the id is taken in the dataset. */
    /** Null when the id is taken. */
    async insert(doc: Omit<DatasetItemDoc, '_id'>): Promise<DatasetItem | null> {
      const full = { _id: datasetItemKey(doc, doc.datasetId, doc.id), ...doc };
      if (!(await unlessDuplicate(() => Model.collection.insertOne(full as never)))) return null;
      return toDatasetItem(full);
    },
    async findById(scope: ProjectScope, datasetId: string, id: string): Promise<DatasetItem | null> {
      const d = await Model.findOne({ _id: datasetItemKey(scope, datasetId, id), ...scoped(scope) }).lean();
      return d ? toDatasetItem(d) : null;
    },
    async list(scope: ProjectScope, datasetId: string, page: number, limit: number) {
      const q = { ...scoped(scope), datasetId };
      const { rows, total } = await listPage(Model, { filter: q, sort: { createdAt: 1, _id: 1 } }, page, limit);
      return { rows: rows.map(toDatasetItem), total };
    },
    async update(
      scope: ProjectScope,
      datasetId: string,
      id: string,
      set: Partial<Pick<DatasetItemDoc, 'input' | 'expectedOutput' | 'updatedAt'>>,
    ): Promise<DatasetItem | null> {
      const d = await Model.findOneAndUpdate(
        { _id: datasetItemKey(scope, datasetId, id), ...scoped(scope) },
        { $set: set },
        { new: true },
      ).lean();
      return d ? toDatasetItem(d) : null;
    },
    async remove(scope: ProjectScope, datasetId: string, id: string): Promise<boolean> {
      const r = await Model.deleteOne({ _id: datasetItemKey(scope, datasetId, id), ...scoped(scope) });
      return r.deletedCount === 1;
    },
  };
}
