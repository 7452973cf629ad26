import { mongoose, type Connection, type Model, type StoredDoc } from '@platform/mongo';

/** `_id` is the key's public id (also its `id`), so verification is a primary-key lookup. */
const schema = new mongoose.Schema(
  {
    _id: { type: String },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    integrationId: { type: String, required: true },
    name: { type: String, required: true },
    keyPrefix: { type: String, required: true },
    keyHash: { type: String, required: true },
    lastUsedAt: { type: Date, default: null },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'analyticsKeys', versionKey: false, minimize: false },
);
schema.index({ tenantId: 1, projectId: 1, createdAt: -1, _id: 1 });
schema.index({ tenantId: 1, projectId: 1, integrationId: 1, createdAt: -1, _id: 1 });

export type AnalyticsKeyDoc = StoredDoc<typeof schema>;

export function analyticsKeyModel(db: Connection): Model<AnalyticsKeyDoc> {
  return db.models.AnalyticsKey ?? db.model<AnalyticsKeyDoc>('AnalyticsKey', schema);
}
