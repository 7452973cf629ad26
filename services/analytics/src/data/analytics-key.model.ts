import { scopedSchema, type Connection, type Model, type StoredDoc } from '@platform/mongo';

/** `_id` is the key's public id (also its `id`), so verification is a primary-key lookup. */
const schema = scopedSchema(
  {
    integrationId: { type: String, required: true },
    name: { type: String, required: true },
    keyPrefix: { type: String, required: true },
    keyHash: { type: String, required: true },
    lastUsedAt: { type: Date, default: null },
  },
  { collection: 'analyticsKeys', id: false, minimize: false },
);
schema.index({ tenantId: 1, projectId: 1, createdAt: -1, _id: 1 });
schema.index({ tenantId: 1, projectId: 1, integrationId: 1, createdAt: -1, _id: 1 });

export type AnalyticsKeyDoc = StoredDoc<typeof schema>;

export function analyticsKeyModel(db: Connection): Model<AnalyticsKeyDoc> {
  return db.models.AnalyticsKey ?? db.model<AnalyticsKeyDoc>('AnalyticsKey', schema);
}
