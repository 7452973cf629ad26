import { scopedSchema, type Connection, type Model, type StoredDoc } from '@platform/mongo';

/**
 * `_id` is `<tenant>:<project>:<id>`: a retry with the same id is a duplicate primary key, so concurrent
 * retries can only ever leave one row. `properties` and `userProperties` are kept as JSON text: they are never
 * queried, and caller keys with `.` or `$` (common in analytics) could not be stored as field names on every
 * Mongo-wire server. The `bucket*` fields hold `createdAt` truncated to the UTC minute, hour and day, so
 * counts per bucket are a plain `$group` (FerretDB has no date operators).
 */
const schema = scopedSchema(
  {
    integrationId: { type: String, default: null },
    keyId: { type: String, required: true },
    entityType: { type: String, required: true },
    type: { type: String, required: true },
    messageId: { type: String },
    conversationId: { type: String },
    searchQuery: { type: String },
    propertiesJson: { type: String, default: null },
    userPropertiesJson: { type: String, default: null },
    createdAt: { type: Date, required: true },
    receivedAt: { type: Date, required: true },
    bucketMinute: { type: Date, required: true },
    bucketHour: { type: Date, required: true },
    bucketDay: { type: Date, required: true },
  },
  { collection: 'analyticsEvents', timestamps: false, minimize: false },
);
// Time-range queries per project, per project and type, per project and entityType.
schema.index({ tenantId: 1, projectId: 1, createdAt: -1 });
schema.index({ tenantId: 1, projectId: 1, type: 1, createdAt: -1 });
schema.index({ tenantId: 1, projectId: 1, entityType: 1, createdAt: -1 });

export type AnalyticsEntityTypeName = 'message' | 'conversation' | 'search';

// entityType is a plain String the code only ever writes an AnalyticsEntityTypeName to.
export type AnalyticsEventDoc = StoredDoc<typeof schema, string, { entityType: AnalyticsEntityTypeName }>;

export function analyticsEventModel(db: Connection): Model<AnalyticsEventDoc> {
  return db.models.AnalyticsEvent ?? db.model<AnalyticsEventDoc>('AnalyticsEvent', schema);
}
