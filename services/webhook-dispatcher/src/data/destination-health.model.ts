import { mongoose, type Connection, type Model, type StoredDoc } from '@platform/mongo';

/**
 * Per destination: since when its deliveries have failed without a success in between, and a disable request
 * not yet confirmed by management (retried by the worker until it is). `_id` is `<tenant>:<project>:<id>`.
 */
const schema = new mongoose.Schema(
  {
    _id: { type: String },
    partition: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    destinationId: { type: String, required: true },
    failingSince: { type: Date, default: null },
    pendingDisableReason: { type: String, default: null },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'destinationHealth', versionKey: false },
);
schema.index({ partition: 1, pendingDisableReason: 1 });

export type DestinationHealthDoc = StoredDoc<typeof schema>;

export function destinationHealthModel(db: Connection): Model<DestinationHealthDoc> {
  return db.models.DestinationHealth ?? db.model<DestinationHealthDoc>('DestinationHealth', schema);
}
