import { mongoose, retireIndexes, type Connection, type Model, type StoredDoc } from '@platform/mongo';
import { outboxFields, type PendingEventsField } from '@platform/outbox';

/**
 * `_id` is `<tenant>:<project>:<id>`: the idempotent insert is a primary-key write, and concurrent
 * duplicates of one id can only ever leave one row.
 */
const schema = new mongoose.Schema(
  {
    _id: { type: String },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    /** This and the next four are kept in `body` (run-event.repo.ts `storedRow`), and read out of it. */
    type: { type: String },
    agentId: { type: String, default: null },
    conversationId: { type: String, default: null },
    messageId: { type: String, default: null },
    properties: { type: mongoose.Schema.Types.Mixed, default: null },
    userProperties: { type: mongoose.Schema.Types.Mixed, default: null },
    metadata: { type: mongoose.Schema.Types.Mixed, default: null },
    serverMetadata: { type: mongoose.Schema.Types.Mixed },
    /**
     * The row's JSON text of what no read filters or sorts by: type, agentId, properties, metadata, serverMetadata and
     * what the event.created needs beyond the row (the dispatch flag and the trace context: the sweep rebuilds the
     * event from the row after a crash, it is not stored twice).
     */
    body: { type: String },
    createdAt: { type: Date, required: true },
    ...outboxFields,
  },
  // Written through the driver (the group commit): the defaults above are not applied, and a field that is null is
  // absent from the row (run-event.repo.ts `storedRow`); every read takes a missing field as null.
  { collection: 'runEvents', versionKey: false, minimize: false },
);
// The reads of a conversation's and of a message's events. Every index costs each insert its write: no other is kept.
schema.index({ tenantId: 1, projectId: 1, conversationId: 1, createdAt: -1 });
schema.index({ tenantId: 1, projectId: 1, messageId: 1, createdAt: -1 });
// Created by earlier releases; nothing reads through them (the batch rows are found by the marker's `_id` list).
retireIndexes(schema, [{ tenantId: 1, projectId: 1, createdAt: -1 }, { outboxBatch: 1 }]);

// The property maps, serverMetadata and pendingEvents are Mixed paths (InferSchemaType types them as `any`). A
// property map is stored as its JSON text when one of its keys cannot be a field name (`$…`, `a.b`).
export type RunEventDoc = StoredDoc<
  typeof schema,
  string,
  PendingEventsField & {
    properties: Record<string, unknown> | string | null;
    userProperties: Record<string, unknown> | string | null;
    metadata: Record<string, unknown> | string | null;
    serverMetadata?: { authMethod: string } & Record<string, unknown>;
  }
>;

export function runEventModel(db: Connection): Model<RunEventDoc> {
  return db.models.RunEvent ?? db.model<RunEventDoc>('RunEvent', schema);
}
