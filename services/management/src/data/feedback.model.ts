import { scopedSchema, type Connection, type Model, type StoredDoc } from '@platform/mongo';
import { outboxFields, type PendingEventsField } from '@platform/outbox';

/** `_id` is `<tenant>:<project>:<id>`. Creation writes its `feedback.created` event into the same document (outbox). */
const schema = scopedSchema(
  {
    conversationId: { type: String, required: true },
    messageId: { type: String, default: null },
    agentId: { type: String, default: null },
    type: { type: String, required: true },
    details: { type: String, default: null },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
    ...outboxFields,
  },
  { collection: 'feedback', timestamps: false, minimize: false },
);
schema.index({ tenantId: 1, projectId: 1, createdAt: -1, _id: 1 });
schema.index({ tenantId: 1, projectId: 1, conversationId: 1, createdAt: -1, _id: 1 });
schema.index({ tenantId: 1, projectId: 1, agentId: 1, createdAt: -1, _id: 1 });

// type is a plain String the code only ever writes one of these values to; pendingEvents is Mixed.
export type FeedbackDoc = StoredDoc<typeof schema, string, PendingEventsField & { type: 'positive' | 'negative' }>;

export function feedbackModel(db: Connection): Model<FeedbackDoc> {
  return db.models.Feedback ?? db.model<FeedbackDoc>('Feedback', schema);
}
