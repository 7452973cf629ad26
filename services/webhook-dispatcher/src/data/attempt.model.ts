import { mongoose, type Connection, type Model, type StoredDoc } from '@platform/mongo';

/**
 * The delivery log, insert-only: one row per attempt of a delivery (and one when a delivery is cancelled without an
 * attempt). `_id` is `<webhook-id>#<attempt>`, so an attempt recorded twice (a job redelivered after a crash) is one row.
 * The row of a delivery's latest attempt carries `latest: true` and says what the delivery's state is now; a later
 * attempt takes the flag over (the only update, and only on the retry path). A first attempt that succeeds is therefore
 * one insert, written together with its neighbours' in one insertMany.
 */
const schema = new mongoose.Schema(
  {
    _id: { type: String },
    /** The deployment that works it (WEBHOOK_PARTITION). */
    partition: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    destinationId: { type: String, required: true },
    /** The `webhook-id`: the same on every attempt of one delivery. */
    deliveryId: { type: String, required: true },
    eventId: { type: String, required: true },
    eventType: { type: String, required: true },
    /** The run event's own id (`event.created` deliveries), for finding a run event's deliveries; null otherwise. */
    runEventId: { type: String, default: null },
    /** attempt: the receiver was tried; cancel: the delivery ended without trying (destination disabled or deleted). */
    kind: { type: String, required: true },
    attempt: { type: Number, required: true },
    at: { type: Date, required: true },
    statusCode: { type: Number, default: null },
    ok: { type: Boolean, required: true },
    error: { type: String, default: null },
    durationMs: { type: Number, required: true },
    manual: { type: Boolean, default: undefined },
    /** The delivery's state after this row: pending (a retry is scheduled at nextAttemptAt), delivered, failed, cancelled. */
    status: { type: String, required: true },
    nextAttemptAt: { type: Date, default: null },
    latest: { type: Boolean, default: undefined },
    deliveryCreatedAt: { type: Date, required: true },
    /** The exact JSON body sent (and signed), kept for a resend. */
    body: { type: String, required: true },
  },
  { collection: 'deliveryAttempts', versionKey: false },
);
schema.index({ partition: 1, tenantId: 1, projectId: 1, destinationId: 1, latest: 1, deliveryCreatedAt: -1 });
schema.index({ partition: 1, deliveryId: 1 });
schema.index({ partition: 1, tenantId: 1, projectId: 1, destinationId: 1, runEventId: 1, latest: 1 });

// kind and status are plain Strings the code only ever writes one of these values to.
export type AttemptDoc = StoredDoc<typeof schema, string, { kind: 'attempt' | 'cancel'; status: DeliveryStatus }>;

export function attemptModel(db: Connection): Model<AttemptDoc> {
  return db.models.DeliveryAttempt ?? db.model<AttemptDoc>('DeliveryAttempt', schema);
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'cancelled';
