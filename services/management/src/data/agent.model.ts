import { scopedSchema, type Connection, type Model, type StoredDoc } from '@platform/mongo';
import { outboxFields, type PendingEventsField } from '@platform/outbox';

/**
 * Agents are stored as immutable revisions: `_id` is `<tenant>:<project>:<agentId>#<revision>`. Each revision holds
 * the whole definition and attachments as JSON text (`body`), so a create and every attachment change is ONE insert.
 * Inserting revision N+1 is the compare-and-set: of two concurrent writers only one can insert that `_id` (the
 * Mongo-wire server we run on applies a conditional update non-atomically, and rewrites whole documents, so a
 * mutable document would lose changes to concurrent writers). Revision 1 is kept for good (it names the agent);
 * revisions between it and the latest are pruned (their events ride in their insert's batch marker, not in them).
 */
const schema = scopedSchema(
  {
    name: { type: String, required: true },
    body: { type: String, required: true },
    /** Skills attached to any sub-agent in this revision (so deleting a skill can find its users). */
    skillIds: { type: [String], default: [] },
    revision: { type: Number, required: true },
    /** Set by an idempotent whole-definition replacement (an improvement merge): a retry with the same id is a no-op. */
    changeId: { type: String, default: null },
    /**
     * A tombstone: the agent was deleted at this revision (DELETE PA). Revisions after it are a new agent of the same
     * id. `cascadePending` stays set until the agent's triggers and API keys are gone too (a sweep finishes the job
     * after a crash).
     */
    deleted: { type: Boolean, default: undefined },
    cascadePending: { type: Boolean, default: undefined },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
    ...outboxFields,
  },
  { collection: 'agentRevisions', timestamps: false, minimize: false },
);
schema.index({ tenantId: 1, projectId: 1, id: 1, revision: -1 });
schema.index({ revision: 1, tenantId: 1, projectId: 1, id: 1 });
schema.index({ tenantId: 1, projectId: 1, skillIds: 1 });
schema.index({ deleted: 1, tenantId: 1, projectId: 1 }, { sparse: true });
schema.index({ cascadePending: 1 }, { sparse: true });

// pendingEvents is a Mixed path (InferSchemaType types it as `any`).
export type AgentDoc = StoredDoc<typeof schema, string, PendingEventsField>;

export function agentModel(db: Connection): Model<AgentDoc> {
  return db.models.AgentRevision ?? db.model<AgentDoc>('AgentRevision', schema);
}
