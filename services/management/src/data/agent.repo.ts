import type { AgentPath, PendingEvent, ProjectScope } from '@platform/contracts';
import { scoped, scopedId, type Connection } from '@platform/mongo';
import type { Outbox } from '@platform/outbox';
import { getLogger } from '@platform/logger';
import { LRUCache } from 'lru-cache';
import { agentModel } from './agent.model';

/** One revision of an agent as the domain sees it: a plain object (the model's document type stays in data/). */
export interface StoredAgent {
  _id: string;
  id: string;
  tenantId: string;
  projectId: string;
  name: string;
  body: string;
  skillIds: string[];
  revision: number;
  changeId?: string | null;
  deleted?: boolean | null;
  cascadePending?: boolean | null;
  createdAt: Date;
  updatedAt: Date;
}

const log = getLogger('management.agents');

const revisionId = (scope: ProjectScope, agentId: string, revision: number) =>
  `${scopedId(scope, agentId)}#${revision}`;

export type AgentRepo = ReturnType<typeof agentRepo>;

/**
 * How long, and for how many agents, a read that found an agent live is taken as the answer of the check before a key
 * or trigger is written for it (the check after the write always reads: domain/agents.ts, `AgentLiveness`).
 */
const SEEN_LIVE_MS = 60_000;
const SEEN_LIVE_MAX = 10_000;

export function agentRepo(db: Connection, outbox: Outbox) {
  const Model = agentModel(db);
  const writer = outbox.of(Model);
  const hidden = writer.hidden;
  const seenLive = new LRUCache<string, true>({ max: SEEN_LIVE_MAX, ttl: SEEN_LIVE_MS });

  /** Inserts a revision with its events (published once it is stored); null when that revision exists. */
  const insertRevision = async (doc: Omit<StoredAgent, '_id'>, events: PendingEvent[]): Promise<StoredAgent | null> => {
    const full: StoredAgent = { _id: revisionId(doc, doc.id, doc.revision), ...doc, changeId: doc.changeId ?? null };
    return (await writer.insert({ ...full }, events)) === 'inserted' ? full : null;
  };

  /**
   * Inserts the revision after `current` with `set` applied; null when another writer took it first. Superseded
   * revisions are emptied (revision 1 stays whole: it names the agent; a revision whose events an earlier release left
   * in it waits until they are out). Their keys stay taken: a writer that read revision n before n+1 and n+2 were
   * written must fail on key n+1, not find it free and store a change behind n+2 (a deleted revision made exactly that
   * possible: one of 8 concurrent attaches answered 201 and was missing).
   */
  const insertNext = async (
    current: StoredAgent,
    set: Partial<StoredAgent>,
    events: PendingEvent[],
  ): Promise<StoredAgent | null> => {
    const { _id, ...rest } = current;
    const written = await insertRevision({ ...rest, ...set, revision: current.revision + 1 }, events);
    if (!written) return null;
    Model.updateMany(
      { ...scoped(current), id: current.id, revision: { $gt: 1, $lt: written.revision }, outboxPending: { $ne: true } },
      { $set: { body: '', skillIds: [] } },
    )
      .exec()
      .catch((err: unknown) => log.warn({ err, agentId: current.id }, 'could not prune agent revisions'));
    return written;
  };

  /** Agents (`<tenant>:<project>:<id>`) whose latest revision is a tombstone, among the tombstones matching `filter`. */
  const deletedIds = async (filter: Record<string, unknown>): Promise<Set<string>> => {
    const tombs = await Model.find(
      { ...filter, deleted: true },
      { id: 1, tenantId: 1, projectId: 1, revision: 1 },
    ).lean<Array<Pick<StoredAgent, 'id' | 'tenantId' | 'projectId' | 'revision'>>>();
    const dead = new Set<string>();
    await Promise.all(
      tombs.map(async (t) => {
        const newer = await Model.exists({
          tenantId: t.tenantId,
          projectId: t.projectId,
          id: t.id,
          revision: { $gt: t.revision },
        });
        if (!newer) dead.add(scopedId(t, t.id));
      }),
    );
    return dead;
  };

  return {
    model: Model,
    /**
     * Inserts a new agent: revision 1, or, when the id belonged to an agent that was deleted, the revision after its
     * tombstone. Null when the id is taken (by a live agent, or by a concurrent create).
     */
    async insert(doc: Omit<StoredAgent, '_id' | 'revision'>, events: PendingEvent[]): Promise<StoredAgent | null> {
      const first = await insertRevision({ ...doc, revision: 1 }, events);
      if (first) return first;
      const last = await this.latest(doc, doc.id);
      if (!last?.deleted) return null;
      return insertRevision({ ...doc, revision: last.revision + 1 }, events);
    },
    /** The latest revision, a tombstone included. */
    async latest(scope: ProjectScope, id: string): Promise<StoredAgent | null> {
      return Model.findOne({ ...scoped(scope), id }, hidden)
        .sort({ revision: -1 })
        .lean();
    },
    /** The latest revision of a live agent (null when it never existed or was deleted). */
    async findById(scope: ProjectScope, id: string): Promise<StoredAgent | null> {
      const doc = await this.latest(scope, id);
      return doc && !doc.deleted ? doc : null;
    },
    /** Whether the agent is live now (its latest revision is not a tombstone): one read of that revision's flag. */
    async isLive(agent: AgentPath): Promise<boolean> {
      const key = scopedId(agent, agent.agentId);
      const latest = await Model.findOne({ ...scoped(agent), id: agent.agentId }, { _id: 0, deleted: 1 })
        .sort({ revision: -1 })
        .lean();
      const live = latest !== null && latest.deleted !== true;
      if (live) seenLive.set(key, true);
      else seenLive.delete(key);
      return live;
    },
    /**
     * `isLive`, or true without a read when a read of this process found the agent live in the last minute (a deletion
     * since then, here or on another replica, is seen by the `isLive` that follows the write).
     */
    async seenLive(agent: AgentPath): Promise<boolean> {
      return seenLive.has(scopedId(agent, agent.agentId)) || this.isLive(agent);
    },
    /** Writes the revision after `current`; null when another writer took that revision first. */
    async replaceBody(
      current: StoredAgent,
      set: { body: string; skillIds: string[]; updatedAt: Date; changeId?: string },
      events: PendingEvent[],
    ): Promise<StoredAgent | null> {
      return insertNext(current, { ...set, changeId: set.changeId ?? null }, events);
    },
    /**
     * Writes the tombstone after `current` (the agent is gone for every reader at once), its triggers and keys still
     * to be removed (`cascadePending`); null when another writer took that revision first.
     */
    async insertTombstone(current: StoredAgent, at: Date, events: PendingEvent[]): Promise<StoredAgent | null> {
      const tombstone = await insertNext(
        current,
        { body: '{}', skillIds: [], updatedAt: at, changeId: null, deleted: true, cascadePending: true },
        events,
      );
      seenLive.delete(scopedId(current, current.id));
      return tombstone;
    },
    /** The triggers and keys of a deleted agent are gone. */
    async cascadeDone(tombstone: StoredAgent): Promise<void> {
      await writer.update({ _id: tombstone._id }, { $unset: { cascadePending: 1 } });
    },
    /** Tombstones whose cascade did not finish (the process stopped in between). */
    async pendingCascades(limit: number): Promise<StoredAgent[]> {
      return Model.find({ cascadePending: true }, hidden).limit(limit).lean();
    },
    /** A page of a project's agents (latest revisions), ordered by id, after `after` (internal: evals copies them). */
    async page(scope: ProjectScope, after: string | undefined, limit: number): Promise<StoredAgent[]> {
      const ids = await Model.find(
        { ...scoped(scope), revision: 1, ...(after !== undefined ? { id: { $gt: after } } : {}) },
        { id: 1 },
      )
        .sort({ id: 1 })
        .limit(limit)
        .lean<Array<Pick<StoredAgent, 'id'>>>();
      const latest = await Promise.all(ids.map((r) => this.findById(scope, r.id)));
      return latest.filter((d): d is StoredAgent => d !== null);
    },
    /** Page `page` of a project's live agents (latest revisions), ordered by id, and how many there are. */
    async list(scope: ProjectScope, page: number, limit: number): Promise<{ rows: StoredAgent[]; total: number }> {
      const prefix = scopedId(scope, '');
      const dead = [...(await deletedIds(scoped(scope)))].map((key) => key.slice(prefix.length));
      const q = { ...scoped(scope), revision: 1, ...(dead.length ? { id: { $nin: dead } } : {}) };
      const [ids, total] = await Promise.all([
        Model.find(q, { id: 1 })
          .sort({ id: 1 })
          .skip((page - 1) * limit)
          .limit(limit)
          .lean<Array<Pick<StoredAgent, 'id'>>>(),
        Model.countDocuments(q),
      ]);
      const latest = await Promise.all(ids.map((r) => this.findById(scope, r.id)));
      return { rows: latest.filter((d): d is StoredAgent => d !== null), total };
    },
    /** Agents a caller may see: all (admin) or one tenant's; names only; deleted agents left out. */
    async available(filter: { tenantId?: string }, limit: number) {
      const q = { revision: 1, ...(filter.tenantId ? { tenantId: filter.tenantId } : {}) };
      const [rows, dead] = await Promise.all([
        Model.find(q, { id: 1, name: 1, tenantId: 1, projectId: 1 })
          .sort({ tenantId: 1, projectId: 1, id: 1 })
          .limit(limit)
          .lean<Array<Pick<StoredAgent, 'id' | 'name' | 'tenantId' | 'projectId'>>>(),
        deletedIds(filter.tenantId ? { tenantId: filter.tenantId } : {}),
      ]);
      return rows.filter((r) => !dead.has(scopedId(r, r.id)));
    },
    /** Ids of the agents of a project whose latest revision has `skillId` attached to some sub-agent. */
    async usingSkill(scope: ProjectScope, skillId: string): Promise<string[]> {
      const rows = await Model.find({ ...scoped(scope), skillIds: skillId }, { id: 1 })
        .limit(200)
        .lean<Array<Pick<StoredAgent, 'id'>>>();
      const ids = [...new Set(rows.map((r) => r.id))];
      const latest = await Promise.all(ids.map((id) => this.findById(scope, id)));
      return latest.filter((d): d is StoredAgent => !!d && d.skillIds.includes(skillId)).map((d) => d.id);
    },
  };
}
