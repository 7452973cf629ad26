import { mongoose, type Connection, type Model, type StoredDoc } from '@platform/mongo';

/**
 * Delivery counters of one destination for one UTC hour (`_id` `<partition>:<tenant>:<project>:<destination>:<hour>`),
 * in twelve 5-minute slots: `s.<0-11>.{delivered,failed,pending,cancelled,attempts,h.<bucket>}` (see domain/stats.ts).
 * Written only by $inc upserts of the batched aggregator. Reads take the destination's documents and use the last week's
 * (FerretDB v1 has no TTL indexes: documents older than that are left for a clean-up with the log's retention).
 */
const schema = new mongoose.Schema(
  {
    _id: { type: String },
    partition: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    destinationId: { type: String, required: true },
    hour: { type: Date, required: true },
    s: { type: mongoose.Schema.Types.Mixed, default: undefined },
  },
  { collection: 'deliveryStats', versionKey: false, minimize: false },
);
schema.index({ partition: 1, tenantId: 1, projectId: 1, destinationId: 1 });

// s is a Mixed path (InferSchemaType types it as `any`).
export type DeliveryStatsDoc = StoredDoc<typeof schema, string, { s?: Record<string, Record<string, unknown>> }>;

export function deliveryStatsModel(db: Connection): Model<DeliveryStatsDoc> {
  return db.models.DeliveryStats ?? db.model<DeliveryStatsDoc>('DeliveryStats', schema);
}
