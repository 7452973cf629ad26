import type { AnalyticsKey, ProjectScope } from '@platform/contracts';
import { iso, scoped, type Connection, listPage } from '@platform/mongo';
import { analyticsKeyModel, type AnalyticsKeyDoc } from './analytics-key.model';

export function toAnalyticsKey(d: AnalyticsKeyDoc): AnalyticsKey {
  return {
    id: d._id,
    name: d.name,
    integrationId: d.integrationId,
    publicId: d._id,
    keyPrefix: d.keyPrefix,
    lastUsedAt: iso(d.lastUsedAt) ?? null,
    createdAt: iso(d.createdAt)!,
    updatedAt: iso(d.updatedAt)!,
  };
}

export type AnalyticsKeyRepo = ReturnType<typeof analyticsKeyRepo>;

export function analyticsKeyRepo(db: Connection) {
  const Model = analyticsKeyModel(db);
  const hidden = { keyHash: 0 };
  return {
    model: Model,
    async insert(doc: AnalyticsKeyDoc): Promise<AnalyticsKey> {
      await Model.collection.insertOne(doc as never);
      return toAnalyticsKey(doc);
    },
    async findById(scope: ProjectScope, id: string): Promise<AnalyticsKey | null> {
      const d = await Model.findOne({ _id: id, ...scoped(scope) }, hidden).lean();
      return d ? toAnalyticsKey(d) : null;
    },
    /** For verification: by public id only, with the hash. */
    async findForVerify(publicId: string): Promise<AnalyticsKeyDoc | null> {
      return Model.findById(publicId).lean();
    },
    async list(scope: ProjectScope, filter: { integrationId?: string }, page: number, limit: number) {
      const q = { ...scoped(scope), ...(filter.integrationId ? { integrationId: filter.integrationId } : {}) };
      const { rows, total } = await listPage(
        Model,
        { filter: q, sort: { createdAt: -1, _id: 1 }, projection: hidden },
        page,
        limit,
      );
      return { rows: rows.map(toAnalyticsKey), total };
    },
    async remove(scope: ProjectScope, id: string): Promise<boolean> {
      const r = await Model.deleteOne({ _id: id, ...scoped(scope) });
      return r.deletedCount === 1;
    },
    touch(id: string, at: Date) {
      return Model.updateOne({ _id: id }, { $set: { lastUsedAt: at } });
    },
  };
}
