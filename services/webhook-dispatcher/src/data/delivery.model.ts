import { mongoose, type Connection, type Model } from '@platform/mongo';
import { outboxFields } from '@platform/outbox';

/**
 * One delivery of one event to one destination. `_id` is the `webhook-id` (the same on every attempt).
 * A pending delivery is due at `nextAttemptAt`; a worker claims it by moving `nextAttemptAt` to the end of a
 * lease and setting `claimToken` in one findOneAndUpdate, so replicas never work the same attempt twice and a
 * crashed worker's claim runs out by itself.
 */
const schema = new mongoose.Schema(
  {
    _id: { type: String },
    /** The deployment that works it (WEBHOOK_PARTITION). */
    partition: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    destinationId: { type: String, required: true },
    eventId: { type: String, required: true },
    eventType: { type: String, required: true },
    /** The exact JSON body every attempt sends (and signs). */
    body: { type: String, required: true },
    /** W3C trace context of the event that caused it: every attempt is a span of that trace. */
    traceparent: { type: String, default: undefined },
    status: { type: String, required: true },
    attemptCount: { type: Number, required: true },
    nextAttemptAt: { type: Date, default: null },
    claimToken: { type: String, default: null },
    lastStatusCode: { type: Number, default: null },
    lastError: { type: String, default: null },
    attempts: { type: [mongoose.Schema.Types.Mixed], default: [] },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
    /** Outcome events (webhook.delivery.succeeded / failed) waiting to be relayed. */
    ...outboxFields,
  },
  { collection: 'deliveries', versionKey: false },
);
schema.index({ partition: 1, status: 1, nextAttemptAt: 1 });
schema.index({ tenantId: 1, projectId: 1, destinationId: 1, createdAt: -1, _id: 1 });

/**
 * One claim of one delivery at one due time (`<deliveryId>@<due ms>`). Inserting it is the compare-and-set that lets
 * exactly one worker send an attempt: some Mongo-wire servers (FerretDB) can let two concurrent findOneAndUpdate
 * claims of one document both succeed, but never two inserts of one `_id`. Removed when the attempt is recorded.
 */
const claimSchema = new mongoose.Schema(
  {
    _id: { type: String },
    deliveryId: { type: String, required: true },
    createdAt: { type: Date, required: true },
  },
  { collection: 'deliveryClaims', versionKey: false },
);
claimSchema.index({ deliveryId: 1 });

export function deliveryClaimModel(db: Connection): Model<any> {
  return db.models.DeliveryClaim ?? db.model('DeliveryClaim', claimSchema);
}

export function deliveryModel(db: Connection): Model<any> {
  return db.models.Delivery ?? db.model('Delivery', schema);
}

export interface DeliveryAttemptDoc {
  attempt: number;
  at: Date;
  statusCode: number | null;
  ok: boolean;
  error: string | null;
  durationMs: number;
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'cancelled';

export interface DeliveryDoc {
  _id: string;
  partition: string;
  tenantId: string;
  projectId: string;
  destinationId: string;
  eventId: string;
  eventType: string;
  body: string;
  traceparent?: string;
  status: DeliveryStatus;
  attemptCount: number;
  nextAttemptAt: Date | null;
  claimToken: string | null;
  lastStatusCode: number | null;
  lastError: string | null;
  attempts: DeliveryAttemptDoc[];
  createdAt: Date;
  updatedAt: Date;
}
