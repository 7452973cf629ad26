import type { ApiKey, ProjectScope, PendingEvent } from '@platform/contracts';
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { getLogger } from '@platform/logger';
import { isDuplicateKey, iso, listPage, scoped, type Connection } from '@platform/mongo';
import type { Outbox } from '@platform/outbox';
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
  const ids = (scope: ProjectScope) => ({
    stamp: `stamp:${scope.tenantId}:${scope.projectId}`,
    count: `count:${scope.tenantId}:${scope.projectId}`,
  });
  return {
    /** Project erasure: both documents go (their ids name the project, but they carry no tenantId field). */
    async forget(scope: ProjectScope): Promise<void> {
      const id = ids(scope);
      await Totals.deleteMany({ _id: { $in: [id.stamp, id.count] } });
    },
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
      if (
        cached &&
        typeof cached.n === 'number' &&
        (cached.stamp ?? null) === current &&
        cached.at &&
        Date.now() - cached.at.getTime() < TOTAL_TTL_MS
      )
        return cached.n;
      const n = await countNow();
      await Totals.updateOne(
        { _id: id.count },
        { $set: { n, stamp: current as string, at: new Date() } },
        { upsert: true },
      ).catch(() => undefined);
      return n;
    },
  };
}

const log = getLogger('management.api-keys');

/** Pages kept at most (oldest dropped first), and how long one is trusted without a change seen. */
const PAGES_MAX = 2_000;
const PAGE_TTL_MS = 30_000;

/**
 * Pages of the key list served from memory while the project's keys are unchanged. Every change of a project's keys
 * (create, update, revoke, a new `lastUsedAt`) gives the project a new random stamp in Redis *after* the database
 * write; a list reads the stamp *before* the database, and a cached page is served only while the stamp it was read
 * under is still the project's. So on every replica a list never misses a change that was answered before it began.
 * Without Redis the cache is bypassed (a change whose stamp could not be written is seen at most `PAGE_TTL_MS` late
 * by other replicas; this one drops its pages at once).
 */
function listCache(redis: Redis | undefined) {
  const pages = new Map<string, { stamp: string; at: number; value: { rows: ApiKey[]; total: number } }>();
  const stampKey = (scope: ProjectScope) => `apikeys:stamp:${scope.tenantId}:${scope.projectId}`;
  const dropProject = (scope: ProjectScope) => {
    const prefix = `${scope.tenantId}:${scope.projectId}:`;
    for (const k of pages.keys()) if (k.startsWith(prefix)) pages.delete(k);
  };
  return {
    /** The project's current stamp (made when there is none yet), or undefined when Redis cannot be asked. */
    async stamp(scope: ProjectScope): Promise<string | undefined> {
      if (!redis || redis.status !== 'ready') return undefined;
      try {
        const key = stampKey(scope);
        const stamp = await redis.get(key);
        if (stamp) return stamp;
        // none yet: make one, unless another replica just did (then read theirs)
        await redis.set(key, randomUUID(), 'NX');
        return (await redis.get(key)) ?? undefined;
      } catch {
        return undefined;
      }
    },
    get(key: string, stamp: string | undefined) {
      const hit = stamp === undefined ? undefined : pages.get(key);
      return hit && hit.stamp === stamp && Date.now() - hit.at < PAGE_TTL_MS ? hit.value : undefined;
    },
    put(key: string, stamp: string | undefined, value: { rows: ApiKey[]; total: number }) {
      if (stamp === undefined) return;
      pages.delete(key);
      pages.set(key, { stamp, at: Date.now(), value });
      if (pages.size > PAGES_MAX) pages.delete(pages.keys().next().value!);
    },
    /** The project is erased: its pages here and its stamp in Redis go (a failure throws, so the erasure is retried). */
    async forget(scope: ProjectScope): Promise<void> {
      dropProject(scope);
      if (redis) await redis.del(stampKey(scope));
    },
    /** After a change is stored: a new stamp for the project (every replica's pages of it stop being served). */
    async changed(scope: ProjectScope): Promise<void> {
      dropProject(scope);
      if (!redis) return;
      await redis
        .set(stampKey(scope), randomUUID())
        .catch((err) =>
          log.warn(
            { err: (err as Error).message },
            'could not stamp a change of API keys; other replicas may list the old keys for up to 30 s',
          ),
        );
    },
  };
}

export function apiKeyRepo(db: Connection, outbox: Outbox, redis?: Redis) {
  const Model = apiKeyModel(db);
  const writer = outbox.of(Model);
  const totals = projectTotals(db);
  const cache = listCache(redis);
  const reading = new Map<string, Promise<{ rows: ApiKey[]; total: number }>>();
  const hidden = { ...writer.hidden, keyHash: 0, live: 0 } as const;
  return {
    model: Model,
    /**
     * Project erasure: what of the project's keys is not found by its tenantId and projectId: the list cache's stamp in
     * Redis and the project's two `apiKeyTotals` documents; the keys themselves go with the rest.
     */
    eraseProjectState: async (scope: ProjectScope) => {
      await Promise.all([cache.forget(scope), totals.forget(scope)]);
    },
    async insert(doc: ApiKeyDoc): Promise<ApiKey> {
      if ((await writer.insert({ ...doc, live: true })) === 'duplicate')
        throw new Error(`API key ${doc._id} exists already`);
      await Promise.all([totals.changed(doc), cache.changed(doc)]);
      return toApiKey(doc);
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
      const key = `${scope.tenantId}:${scope.projectId}:${filter.agentId ?? ''}:${page}:${limit}`;
      const stamp = await cache.stamp(scope);
      const cached = cache.get(key, stamp);
      if (cached) return cached;
      // Lists that miss together under one stamp share one read (a cold page under load is read once, not per request).
      const flight = `${key}:${stamp}`;
      const running = reading.get(flight);
      if (running && stamp !== undefined) return running;
      const read = (async () => {
        const q = { ...scoped(scope), ...live, ...(filter.agentId ? { agentId: filter.agentId } : {}) };
        const countNow = () => Model.countDocuments(q);
        const { rows, total } = await listPage<ApiKeyDoc>(
          Model,
          { filter: q, projection: hidden, sort: { createdAt: -1, _id: 1 } },
          page,
          limit,
          {
            readAhead: READ_AHEAD,
            total: filter.agentId ? countNow : () => totals.total(scope, countNow),
          },
        );
        const value = { rows: rows.map(toApiKey), total };
        cache.put(key, stamp, value);
        return value;
      })();
      if (stamp === undefined) return read;
      reading.set(flight, read);
      return read.finally(() => reading.delete(flight));
    },
    /** Ids of the live keys bound to an agent. */
    async idsOfAgent(scope: ProjectScope, agentId: string): Promise<string[]> {
      const rows = await Model.find({ ...scoped(scope), ...live, agentId }, { _id: 1 }).lean<Array<{ _id: string }>>();
      return rows.map((r) => r._id);
    },
    async update(
      scope: ProjectScope,
      id: string,
      set: Partial<ApiKeyDoc>,
      events: PendingEvent[],
    ): Promise<ApiKey | null> {
      const d = await writer.update({ _id: id, ...scoped(scope), ...live }, { $set: set }, events);
      if (d) await cache.changed(scope);
      return d ? toApiKey(d) : null;
    },
    async remove(scope: ProjectScope, id: string, events: PendingEvent[]): Promise<boolean> {
      const d = await writer.remove({ _id: id, ...scoped(scope), ...live }, events, { $set: { live: false } });
      if (d) await Promise.all([totals.changed(scope), cache.changed(scope)]);
      return d !== null;
    },
    async touch(scope: ProjectScope, id: string, at: Date) {
      await writer.update({ _id: id }, { $set: { lastUsedAt: at } });
      await cache.changed(scope);
    },
  };
}
