import type { ApiKey, ProjectScope, PendingEvent } from '@platform/contracts';
import { randomUUID } from 'node:crypto';
import { isDuplicateKey, iso, listPage, scoped, type Connection } from '@platform/mongo';
import { outboxOnDelete, outboxOnUpdate, type OutboxRelay } from '@platform/outbox';
import { apiKeyModel, type ApiKeyDoc } from './api-key.model';

export function toApiKey(d: ApiKeyDoc): ApiKey {
  return {
    id: d._id,
    name: d.name,
    agentId: d.agentId,
    publicId: d._id,
    keyPrefix: d.keyPrefix,
    expiresAt: iso(d.expiresAt) ?? null,
    lastUsedAt: iso(d.lastUsedAt) ?? null,
    createdAt: iso(d.createdAt)!,
    updatedAt: iso(d.updatedAt)!,
  };
}

export type ApiKeyRepo = ReturnType<typeof apiKeyRepo>;

/** Keys not revoked (an equality the database serves; see `live` in api-key.model.ts). */
const live = { live: true } as const;
/** A list reads this many rows: a project with fewer keys gets its page and its total from one query. */
const READ_AHEAD = 100;
/** A cached total is trusted at most this long (it also bounds a wrong total left by a crash mid-write). */
const TOTAL_TTL_MS = 60_000;

/**
 * The number of live keys of each project, so that a full page of a long list does not count every row again.
 * Two documents a project in `apiKeyTotals`: `stamp:<scope>`, given a new random value after every create and revoke,
 * and `count:<scope>`, the last count with the stamp read before it. The count holds while the stamp is unchanged.
 * Writers and readers never write the same document (a Mongo-wire server that rewrites whole documents, FerretDB,
 * would lose one of two concurrent updates of one), and a writer stamps after its key write, so a count that
 * missed the key always sees a newer stamp.
 */
function projectTotals(db: Connection) {
  const Totals = db.collection<{ _id: string; stamp?: string; n?: number; at?: Date }>('apiKeyTotals');
  const ids = (scope: ProjectScope) => ({ stamp: `stamp:${scope.tenantId}:${scope.projectId}`, count: `count:${scope.tenantId}:${scope.projectId}` });
  return {
    async changed(scope: ProjectScope): Promise<void> {
      const set = { $set: { stamp: randomUUID() } };
      await Totals.updateOne({ _id: ids(scope).stamp }, set, { upsert: true }).catch((err) => {
        if (!isDuplicateKey(err)) throw err;
        return Totals.updateOne({ _id: ids(scope).stamp }, set); // another writer created it at the same moment
      });
    },
    async total(scope: ProjectScope, countNow: () => Promise<number>): Promise<number> {
      const id = ids(scope);
      const [stamp, cached] = await Promise.all([Totals.findOne({ _id: id.stamp }), Totals.findOne({ _id: id.count })]);
      const current = stamp?.stamp ?? null;
      if (cached && typeof cached.n === 'number' && (cached.stamp ?? null) === current && cached.at && Date.now() - cached.at.getTime() < TOTAL_TTL_MS) return cached.n;
      const n = await countNow();
      await Totals.updateOne({ _id: id.count }, { $set: { n, stamp: current as string, at: new Date() } }, { upsert: true }).catch(() => undefined);
      return n;
    },
  };
}

export function apiKeyRepo(db: Connection, relay: OutboxRelay) {
  const Model = apiKeyModel(db);
  const totals = projectTotals(db);
  const hidden = { keyHash: 0, pendingEvents: 0, outboxPending: 0, outboxSeq: 0, outboxDelete: 0, live: 0 };
  return {
    model: Model,
    async insert(doc: ApiKeyDoc): Promise<ApiKey> {
      await Model.create({ ...doc, live: true });
      await totals.changed(doc);
      return toApiKey(doc);
    },
    /** Keys stored before `live` existed get it (once; a marker in `apiKeyTotals` records that it was done). */
    async backfillLive(): Promise<void> {
      const Totals = db.collection<{ _id: string }>('apiKeyTotals');
      if (await Totals.findOne({ _id: 'migration:live' })) return;
      await Model.updateMany({ live: { $exists: false }, outboxDelete: { $ne: true } }, { $set: { live: true } });
      await Totals.updateOne({ _id: 'migration:live' }, { $set: { at: new Date() } }, { upsert: true }).catch(() => undefined);
    },
    async findById(scope: ProjectScope, id: string): Promise<ApiKey | null> {
      const d = await Model.findOne({ _id: id, ...scoped(scope), ...live }, hidden).lean();
      return d ? toApiKey(d) : null;
    },
    /** For verification: by public id only, with the hash. */
    async findForVerify(publicId: string): Promise<ApiKeyDoc | null> {
      return Model.findOne({ _id: publicId, ...live }, { pendingEvents: 0 }).lean();
    },
    async list(scope: ProjectScope, filter: { agentId?: string }, page: number, limit: number) {
      const q = { ...scoped(scope), ...live, ...(filter.agentId ? { agentId: filter.agentId } : {}) };
      const countNow = () => Model.countDocuments(q);
      const { rows, total } = await listPage<ApiKeyDoc>(Model, q, hidden, { createdAt: -1, _id: 1 }, page, limit, {
        readAhead: READ_AHEAD,
        total: filter.agentId ? countNow : () => totals.total(scope, countNow),
      });
      return { rows: rows.map(toApiKey), total };
    },
    async update(scope: ProjectScope, id: string, set: Partial<ApiKeyDoc>, events: PendingEvent[]): Promise<ApiKey | null> {
      const ops = outboxOnUpdate(events);
      const d = await relay.exclusive([id], () =>
        Model.findOneAndUpdate({ _id: id, ...scoped(scope), ...live }, { $set: { ...set, ...ops.$set }, $inc: ops.$inc }, { new: true })
          .lean()
          .exec(),
      );
      if (d) relay.flush(d);
      return d ? toApiKey(d) : null;
    },
    async remove(scope: ProjectScope, id: string, events: PendingEvent[]): Promise<boolean> {
      const ops = outboxOnDelete(events);
      const d = await relay.exclusive([id], () =>
        Model.findOneAndUpdate({ _id: id, ...scoped(scope), ...live }, { $set: { ...ops.$set, live: false }, $inc: ops.$inc }, { new: true }).lean().exec(),
      );
      if (d) {
        relay.flush(d);
        await totals.changed(scope);
      }
      return d !== null;
    },
    touch(id: string, at: Date) {
      return relay.exclusive([id], () => Model.updateOne({ _id: id }, { $set: { lastUsedAt: at } }).exec());
    },
  };
}
