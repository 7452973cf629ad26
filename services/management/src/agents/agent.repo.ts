import type { PendingEvent, ProjectScope } from '@platform/contracts';
import { isDuplicateKey, scoped, scopedId, type Connection, unlessDuplicate } from '@platform/mongo';
import { outboxOnCreate, type OutboxRelay } from '@platform/outbox';
import { getLogger } from '@platform/logger';
import { agentModel, type AgentDoc } from './agent.model';

const log = getLogger('management.agents');

const revisionId = (scope: ProjectScope, agentId: string, revision: number) => `${scopedId(scope, agentId)}#${revision}`;

export type AgentRepo = ReturnType<typeof agentRepo>;

export function agentRepo(db: Connection, relay: OutboxRelay) {
  const Model = agentModel(db);
  const hidden = { pendingEvents: 0, outboxPending: 0, outboxSeq: 0, outboxDelete: 0 };

  /** Inserts a revision with its events pending; `release` hands them to the relay. */
  const insertRevision = async (doc: Omit<AgentDoc, '_id'>, events: PendingEvent[]) => {
    const full: AgentDoc = { _id: revisionId(doc, doc.id, doc.revision), ...doc };
    const outbox = outboxOnCreate(events);
    await Model.create({ ...full, ...outbox });
    return { written: full, release: () => relay.flush({ _id: full._id, outboxSeq: 1, pendingEvents: outbox.pendingEvents }) };
  };

  return {
    model: Model,
    /** Inserts revision 1 with the whole agent; a taken id throws a duplicate-key error. */
    /** Null when the id is taken. */
    async insert(doc: Omit<AgentDoc, '_id' | 'revision'>, events: PendingEvent[]): Promise<AgentDoc | null> {
      return unlessDuplicate(async () => {
        const { written, release } = await insertRevision({ ...doc, revision: 1 }, events);
        release();
        return written;
      });
    },
    /** The latest revision. */
    async findById(scope: ProjectScope, id: string): Promise<AgentDoc | null> {
      return Model.findOne({ ...scoped(scope), id }, hidden).sort({ revision: -1 }).lean();
    },
    /** Writes the revision after `current`; null when another writer took that revision first. */
    async replaceBody(current: AgentDoc, set: { body: string; skillIds: string[]; updatedAt: Date; changeId?: string }, events: PendingEvent[]): Promise<AgentDoc | null> {
      const { _id, ...rest } = current;
      let inserted: Awaited<ReturnType<typeof insertRevision>>;
      try {
        inserted = await insertRevision({ ...rest, ...set, changeId: set.changeId ?? null, revision: current.revision + 1 }, events);
      } catch (err) {
        if (isDuplicateKey(err)) return null;
        throw err;
      }
      const { written, release } = inserted;
      release();
      // Superseded revisions are emptied once their events are out (revision 1 stays whole: it names the agent). Their
      // keys stay taken: a writer that read revision n before n+1 and n+2 were written must fail on key n+1, not
      // find it free and store a change behind n+2 (a deleted revision made exactly that possible: one of 8
      // concurrent attaches answered 201 and was missing).
      Model.updateMany({ ...scoped(current), id: current.id, revision: { $gt: 1, $lt: written.revision }, outboxPending: { $ne: true } }, { $set: { body: '', skillIds: [] } })
        .exec()
        .catch((err: unknown) => log.warn({ err, agentId: current.id }, 'could not prune agent revisions'));
      return written;
    },
    /** A page of a project's agents (latest revisions), ordered by id, after `after`. */
    async page(scope: ProjectScope, after: string | undefined, limit: number): Promise<AgentDoc[]> {
      const ids = await Model.find({ ...scoped(scope), revision: 1, ...(after !== undefined ? { id: { $gt: after } } : {}) }, { id: 1 })
        .sort({ id: 1 })
        .limit(limit)
        .lean<Array<Pick<AgentDoc, 'id'>>>();
      const latest = await Promise.all(ids.map((r) => this.findById(scope, r.id)));
      return latest.filter((d): d is AgentDoc => d !== null);
    },
    /** Agents a caller may see: all (admin) or one tenant's; names only. */
    async available(filter: { tenantId?: string }, limit: number) {
      const q = { revision: 1, ...(filter.tenantId ? { tenantId: filter.tenantId } : {}) };
      return Model.find(q, { id: 1, name: 1, tenantId: 1, projectId: 1 })
        .sort({ tenantId: 1, projectId: 1, id: 1 })
        .limit(limit)
        .lean<Array<Pick<AgentDoc, 'id' | 'name' | 'tenantId' | 'projectId'>>>();
    },
    /** Ids of the agents of a project whose latest revision has `skillId` attached to some sub-agent. */
    async usingSkill(scope: ProjectScope, skillId: string): Promise<string[]> {
      const rows = await Model.find({ ...scoped(scope), skillIds: skillId }, { id: 1 }).limit(200).lean<Array<Pick<AgentDoc, 'id'>>>();
      const ids = [...new Set(rows.map((r) => r.id))];
      const latest = await Promise.all(ids.map((id) => this.findById(scope, id)));
      return latest.filter((d): d is AgentDoc => !!d && d.skillIds.includes(skillId)).map((d) => d.id);
    },
  };
}
