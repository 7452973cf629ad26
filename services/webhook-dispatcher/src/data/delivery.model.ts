import { mongoose, type Connection, type Model } from '@platform/mongo';

/** One delivery of one event to one destination; `_id` is `<eventId>:<destinationId>`. */
const schema = new mongoose.Schema(
  {
    _id: { type: String },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    destinationId: { type: String, required: true },
    eventId: { type: String, required: true },
    eventType: { type: String, required: true },
    status: { type: String, required: true },
    attempts: { type: [mongoose.Schema.Types.Mixed], default: [] },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'deliveries', versionKey: false },
);
schema.index({ tenantId: 1, projectId: 1, destinationId: 1, createdAt: -1 });

export function deliveryModel(db: Connection): Model<any> {
  return db.models.Delivery ?? db.model('Delivery', schema);
}

export interface DeliveryAttempt {
  at: Date;
  statusCode: number | null;
  ok: boolean;
  error: string | null;
  durationMs: number;
}

export interface DeliveryDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  destinationId: string;
  eventId: string;
  eventType: string;
  status: 'delivered' | 'failed' | 'pending' | 'skipped';
  attempts: DeliveryAttempt[];
  createdAt: Date;
  updatedAt: Date;
}
