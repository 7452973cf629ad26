import { mongoose, type Connection, type Model } from '@platform/mongo';
import { outboxFields } from '@platform/outbox';

/** `_id` is `<tenant>:<project>:<id>`. Creation writes its `feedback.created` event into the same document (outbox). */
const schema = new mongoose.Schema(
  {
    _id: { type: String },
    id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    conversationId: { type: String, required: true },
    messageId: { type: String, default: null },
    agentId: { type: String, default: null },
    type: { type: String, required: true },
    details: { type: String, default: null },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
    ...outboxFields,
  },
  { collection: 'feedback', versionKey: false, minimize: false },
);
schema.index({ tenantId: 1, projectId: 1, createdAt: -1, _id: 1 });
schema.index({ tenantId: 1, projectId: 1, conversationId: 1, createdAt: -1, _id: 1 });
schema.index({ tenantId: 1, projectId: 1, agentId: 1, createdAt: -1, _id: 1 });

export function feedbackModel(db: Connection): Model<any> {
  return db.models.Feedback ?? db.model('Feedback', schema);
}

export interface FeedbackDoc {
  _id: string;
  id: string;
  tenantId: string;
  projectId: string;
  conversationId: string;
  messageId: string | null;
  agentId: string | null;
  type: 'positive' | 'negative';
  details: string | null;
  createdAt: Date;
  updatedAt: Date;
}
