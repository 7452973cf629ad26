import type { PendingEvent, ProjectScope } from '@platform/contracts';
import { live, outboxOnCreate, outboxOnUpdate, scoped, scopedId, type Connection, type OutboxRelay } from '@platform/mongo';
import { agentModel, type AgentDoc } from './agent.model';

type WithOutbox = AgentDoc & { outboxSeq?: number; pendingEvents?: Record<string, PendingEvent> };

export type AgentRepo = ReturnType<typeof agentRepo>;

export function agentRepo(db: Connection, relay: () => OutboxRelay) {
  const Model = agentModel(db);
  const hidden = { pendingEvents: 0, outboxPending: 0, outboxSeq: 0, outboxDelete: 0 };
  return {
    model: Model,
    /** Inserts the whole agent in one write; a taken id throws a duplicate-key error. */
    async insert(doc: Omit<AgentDoc, '_id'>, events: PendingEvent[]): Promise<AgentDoc> {
      const full: AgentDoc = { _id: scopedId(doc, doc.id), ...doc };
      const outbox = outboxOnCreate(events);
      await Model.create({ ...full, ...outbox });
      relay().flush({ _id: full._id, outboxSeq: 1, pendingEvents: outbox.pendingEvents });
      return full;
    },
    async findById(scope: ProjectScope, id: string): Promise<AgentDoc | null> {
      return Model.findOne({ _id: scopedId(scope, id), ...scoped(scope), ...live }, hidden).lean<AgentDoc>();
    },
    /** Replaces body and skillIds if nobody changed the agent since `current` was read; null when someone did. */
    async replaceBody(current: AgentDoc, set: { body: string; skillIds: string[]; updatedAt: Date }, events: PendingEvent[]): Promise<AgentDoc | null> {
      const ops = outboxOnUpdate(events);
      const d = await Model.findOneAndUpdate(
        { _id: current._id, revision: current.revision, ...live },
        { $set: { ...set, revision: current.revision + 1, ...ops.$set }, $inc: ops.$inc },
        { new: true },
      ).lean<WithOutbox>();
      if (d) relay().flush(d);
      return d;
    },
    /** Agents a caller may see: all (admin) or one tenant's; names only. */
    async available(filter: { tenantId?: string }, limit: number) {
      const q = { ...(filter.tenantId ? { tenantId: filter.tenantId } : {}), ...live };
      return Model.find(q, { id: 1, name: 1, tenantId: 1, projectId: 1 })
        .sort({ tenantId: 1, projectId: 1, id: 1 })
        .limit(limit)
        .lean<Array<Pick<AgentDoc, 'id' | 'name' | 'tenantId' | 'projectId'>>>();
    },
    /** Agents of a project that have `skillId` attached to some sub-agent. */
    async usingSkill(scope: ProjectScope, skillId: string) {
      return Model.find({ ...scoped(scope), skillIds: skillId, ...live }, { id: 1 }).limit(20).lean<Array<Pick<AgentDoc, 'id'>>>();
    },
  };
}
