import mongoose, { type Connection, type Model } from 'mongoose';
import type { PendingEvent } from '@platform/contracts';
import type { Publisher } from '@platform/bus';
import { getLogger } from '@platform/logger';
import { AppError } from '@platform/problems';
import { counter, currentTraceparent } from '@platform/telemetry';

const log = getLogger('mongo');

export interface MongoOptions {
  url: string;
  dbPrefix: string;
  service: string;
  poolSize?: number;
}

// mongoose otherwise formats a stack trace for every query it runs (to report a query executed twice): 1.4 % of
// management's time listing API keys.
mongoose.set('skipOriginalStackTraces', true);

/** One connection per service, to its own database `<prefix>_<service>`. */
export async function connectMongo(opts: MongoOptions): Promise<Connection> {
  const dbName = `${opts.dbPrefix}_${opts.service.replace(/-/g, '_')}`;
  const conn = mongoose.createConnection(opts.url, {
    dbName,
    maxPoolSize: opts.poolSize ?? 20,
    serverSelectionTimeoutMS: 5_000,
    // Indexes and collections are created by ensureIndexes() (only what is missing): on FerretDB a
    // createIndexes takes a global metadata lock, so restarts under load must not issue one needlessly.
    autoIndex: false,
    autoCreate: false,
    retryWrites: false,
    // Every command is reported to countWrites below: the bench reads database writes per delivered webhook from it.
    monitorCommands: true,
  });
  countWrites(conn);
  await conn.asPromise();
  conn.on('disconnected', () => log.warn({ dbName }, 'database disconnected'));
  conn.on('reconnected', () => log.info({ dbName }, 'database reconnected'));
  return conn;
}

const WRITE_COMMANDS = new Set(['insert', 'update', 'delete', 'findAndModify']);

/**
 * `db_commands_total{command,collection}`: the write commands this process sent to the database (one `insertMany`
 * is one command, however many documents it carries). Exposed on /metrics, read by `pnpm bench` around a run.
 */
export function countWrites(conn: Connection): void {
  const total = counter('db_commands_total', 'Write commands sent to the database, by command and collection', ['command', 'collection']);
  conn.getClient().on('commandStarted', (ev) => {
    if (!WRITE_COMMANDS.has(ev.commandName)) return;
    const collection = (ev.command as Record<string, unknown>)[ev.commandName];
    total.inc({ command: ev.commandName, collection: typeof collection === 'string' ? collection : '' });
  });
}

/**
 * Creates the indexes a model's schema declares that the collection does not have yet. Called for every
 * model at service start (see libs/runtime); a restart with everything in place issues no DDL at all.
 */
export async function ensureIndexes(model: Model<any>): Promise<void> {
  let existing: Array<{ key: Record<string, unknown> }> = [];
  try {
    existing = (await model.collection.listIndexes().toArray()) as Array<{ key: Record<string, unknown> }>;
  } catch {
    // The collection does not exist yet: create it now, at start, rather than on a first write under load.
    await model.db.createCollection(model.collection.collectionName).catch(() => undefined);
  }
  const have = new Set(existing.map((i) => JSON.stringify(i.key)));
  for (const [fields, options] of model.schema.indexes()) {
    if (have.has(JSON.stringify(fields))) continue;
    await model.collection.createIndex(fields as Record<string, 1 | -1>, options as Record<string, unknown>);
  }
}

/** Is the database answering right now (for readiness). */
export async function mongoReady(conn: Connection): Promise<boolean> {
  try {
    if (conn.readyState !== 1 || !conn.db) return false;
    await conn.db.admin().ping();
    return true;
  } catch {
    return false;
  }
}

export function scoped(scope: { tenantId: string; projectId?: string }) {
  return scope.projectId === undefined ? { tenantId: scope.tenantId } : { tenantId: scope.tenantId, projectId: scope.projectId };
}

/** Natural `_id` for a record unique within a project: fast primary-key lookups. */
export function scopedId(scope: { tenantId: string; projectId: string }, id: string): string {
  return `${scope.tenantId}:${scope.projectId}:${id}`;
}

export function isDuplicateKey(err: unknown): boolean {
  return (err as { code?: number })?.code === 11000;
}

/** Database errors surface as 503 problems (the request can be retried), never as a stack trace. */
export function isDatabaseUnavailable(err: unknown): boolean {
  const name = (err as Error)?.name ?? '';
  return /MongoNetwork|MongoServerSelection|MongoNotConnected|MongoPoolClosed|MongoTopologyClosed/.test(name);
}

export async function withDbErrors<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (isDatabaseUnavailable(err)) throw new AppError('service_unavailable', 'The database is not reachable; try again shortly', { headers: { 'retry-after': '1' } });
    throw err;
  }
}

export interface ListPageOptions {
  /**
   * Read up to this many rows from the page's start (not only `limit`): when fewer come back, they tell the total
   * and no count is needed. Worth it where the server sorts every matching row anyway (FerretDB sorts and limits in
   * Go after reading all of them), so the extra rows cost only their transfer.
   */
  readAhead?: number;
  /** The total when the rows read do not tell it (default: `countDocuments(filter)`). */
  total?: () => Promise<number>;
}

/**
 * One page of a sorted list and the list's total. The total is counted only when the rows read do not tell it: a
 * short read (every page of a small list, and the last page of any) already tells it exactly, so most list calls
 * are one query.
 */
export async function listPage<T>(
  model: Model<any>,
  filter: Record<string, unknown>,
  projection: Record<string, number> | undefined,
  sort: Record<string, 1 | -1>,
  page: number,
  limit: number,
  opts: ListPageOptions = {},
): Promise<{ rows: T[]; total: number }> {
  const skip = (page - 1) * limit;
  const ahead = Math.max(limit, opts.readAhead ?? limit);
  const read = (await model.find(filter, projection).sort(sort).skip(skip).limit(ahead).lean()) as T[];
  const rows = read.length > limit ? read.slice(0, limit) : read;
  if (read.length < ahead && (read.length > 0 || page === 1)) return { rows, total: skip + read.length };
  return { rows, total: await (opts.total ?? (() => model.countDocuments(filter)))() };
}

export function iso(d: Date | string | undefined | null): string | undefined {
  if (d === undefined || d === null) return undefined;
  return typeof d === 'string' ? d : d.toISOString();
}

/**
 * Outbox fields every model with pending events carries. `pendingEvents` is a map of event id to entry
 * (map keys can be removed one by one with `$unset`, which every Mongo-wire server supports);
 * `outboxSeq` counts appends so the relay clears `outboxPending` only when nothing new arrived.
 */
export const outboxFields = {
  pendingEvents: { type: mongoose.Schema.Types.Mixed, default: undefined },
  outboxPending: { type: Boolean, default: undefined, index: { sparse: true } },
  outboxSeq: { type: Number, default: undefined },
  outboxDelete: { type: Boolean, default: undefined },
};

/** Filter that hides documents whose deletion is being relayed (merge into every read). */
export const live = { outboxDelete: { $ne: true } } as const;

/**
 * Stamps outbox entries with the trace context of the request writing them, so the relay (which runs later, outside
 * the request) publishes each event as part of that request's trace.
 */
export function traced(events: PendingEvent[]): PendingEvent[] {
  const traceparent = currentTraceparent();
  return traceparent ? events.map((e) => (e.traceparent ? e : { ...e, traceparent })) : events;
}

/** Update operators that delete a document through the outbox: it is hidden at once and removed once its events are published. */
export function outboxOnDelete(events: PendingEvent[]) {
  const ops = outboxOnUpdate(events);
  return { $set: { ...ops.$set, outboxDelete: true }, $inc: ops.$inc };
}

/** Fields for a new document whose creation emits `events`. */
export function outboxOnCreate(pending: PendingEvent[]) {
  const events = traced(pending);
  return {
    pendingEvents: Object.fromEntries(events.map((e) => [e.id, e])),
    outboxPending: true,
    outboxSeq: 1,
  };
}

/** Update operators that append `events` to a document's outbox (merge into your own `$set`). */
export function outboxOnUpdate(pending: PendingEvent[]) {
  const events = traced(pending);
  return {
    $set: { outboxPending: true, ...Object.fromEntries(events.map((e) => [`pendingEvents.${e.id}`, e])) } as Record<string, unknown>,
    $inc: { outboxSeq: 1 } as Record<string, number>,
  };
}

export interface OutboxDoc {
  _id: unknown;
  outboxSeq?: number;
  outboxDelete?: boolean;
  pendingEvents?: Record<string, PendingEvent>;
}

/**
 * Serializes writes to the same documents inside one process. Mongo-wire servers that apply an update by reading
 * the document and writing it back whole (FerretDB) lose one of two concurrent updates of a document; every writer
 * of an outbox document (the repository and the relay's clears) goes through the relay's lock so they never overlap.
 */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<unknown>>();

  async run<T>(keys: unknown[], fn: () => Promise<T>): Promise<T> {
    const names = [...new Set(keys.map(String))];
    const before = names.map((k) => this.tails.get(k) ?? Promise.resolve());
    const result = Promise.all(before.map((p) => p.catch(() => undefined))).then(fn);
    const tail = result.catch(() => undefined);
    for (const k of names) this.tails.set(k, tail);
    void tail.then(() => {
      for (const k of names) if (this.tails.get(k) === tail) this.tails.delete(k);
    });
    return result;
  }
}

export interface OutboxRelay {
  /** Publish the pending events of a document just written, then clear them (batched, after the reply). */
  flush(doc: OutboxDoc): void;
  /** Runs a write of the given documents so it never overlaps the relay's clears (or another write) of them. */
  exclusive<T>(ids: unknown[], write: () => Promise<T>): Promise<T>;
  /** Republish everything left pending (at start and on a timer). */
  sweep(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Relays outbox entries to JetStream. The change and its pending events are one document write;
 * the relay publishes with the event id as Nats-Msg-Id (JetStream drops duplicates) and only then clears them.
 * A crash between the two leaves the entries pending; the sweep republishes them.
 */
export function outboxRelay(
  model: Model<any>,
  pub: Publisher,
  opts: { intervalMs?: number; batchMs?: number; onPublished?: (n: number) => void; /** Sweep only these documents (e.g. one partition). */ filter?: Record<string, unknown> } = {},
): OutboxRelay {
  let queue: OutboxDoc[] = [];
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  const lock = new KeyedLock();
  const clearing = new Set<Promise<void>>();
  const MAX_CLEARS = 4;

  /** Publishes the pending events of `docs` (the event id is the Nats-Msg-Id); returns how many. */
  const publish = async (docs: OutboxDoc[]): Promise<number> => {
    const events = docs.flatMap((d) => Object.values(d.pendingEvents ?? {}));
    if (events.length) await pub.publishPending(events);
    return events.length;
  };

  /**
   * Clears what was just published. Few statements, each over many documents: some Mongo-wire servers (FerretDB) hold
   * one database connection per statement of a batched command until the whole command ends, so a bulkWrite of
   * hundreds of updates can exhaust their pool. Every statement also matches `outboxPending: true`: FerretDB v1 sends
   * only plain equality filters to its backend and applies an `$in` itself after reading every row of the collection,
   * so without it each flush read the whole collection (measured: the event write path fell with every row added;
   * docs/perf-notes.md).
   */
  const clearPublished = async (docs: OutboxDoc[], published: number) => {
    await lock.run(
      docs.map((d) => d._id),
      () => clear(docs),
    );
    if (published) opts.onPublished?.(published);
  };

  const publishAndClear = async (docs: OutboxDoc[]) => {
    if (docs.length) await clearPublished(docs, await publish(docs));
  };

  const clear = async (docs: OutboxDoc[]) => {
    // First, where nothing was appended since the document was read (same outboxSeq), every entry was just published:
    // the map and the flag go in one statement per group (or the document is deleted).
    const groups = new Map<string, { del: boolean; seq: number | undefined; ids: unknown[] }>();
    for (const d of docs) {
      const key = `${d.outboxDelete ? 'd' : 'u'}:${d.outboxSeq ?? ''}`;
      const g = groups.get(key) ?? { del: Boolean(d.outboxDelete), seq: d.outboxSeq, ids: [] };
      g.ids.push(d._id);
      groups.set(key, g);
    }
    const appended: unknown[] = [];
    for (const g of groups.values()) {
      const filter = { _id: { $in: g.ids }, outboxPending: true, outboxSeq: g.seq };
      const done = g.del ? (await model.deleteMany(filter)).deletedCount : (await model.updateMany(filter, { $unset: { outboxPending: 1, pendingEvents: 1 } })).modifiedCount;
      if (done < g.ids.length) appended.push(...g.ids);
    }
    // Documents that got new entries meanwhile (or were cleared by another relay): remove only the entries just
    // published and leave the flag for the next flush or sweep. Entry keys are unique event ids, so unsetting their union is exact.
    if (appended.length) {
      const keys = Object.fromEntries(docs.flatMap((d) => Object.keys(d.pendingEvents ?? {})).map((k) => [`pendingEvents.${k}`, 1]));
      if (Object.keys(keys).length) await model.updateMany({ _id: { $in: appended }, outboxPending: true }, { $unset: keys });
    }
  };

  /**
   * Batches are published one after another (so events keep their order), and each batch's clear runs while the next
   * batch is published (up to MAX_CLEARS at once): on a slow database the clears, not the publishes, set the pace, and
   * waiting for each before publishing the next made events wait in the queue (measured: 1.2 s from insert to publish
   * at 50 events/s on a loaded machine). A clear that fails leaves its documents pending for the sweep.
   */
  const drain = async () => {
    while (queue.length) {
      const batch = queue.splice(0, 500);
      let published: number;
      try {
        published = await publish(batch);
      } catch (err) {
        log.warn({ err, count: batch.length }, 'outbox publish failed; the sweep will retry');
        continue;
      }
      while (clearing.size >= MAX_CLEARS) await Promise.race(clearing);
      const job: Promise<void> = clearPublished(batch, published)
        .catch((err) => log.warn({ err, count: batch.length }, 'outbox clear failed; the sweep will retry'))
        .finally(() => clearing.delete(job));
      clearing.add(job);
    }
  };

  const schedule = () => {
    if (timer || stopped) return;
    timer = setTimeout(() => {
      timer = undefined;
      running = running.then(drain);
    }, opts.batchMs ?? 2);
  };

  const sweep = async (): Promise<number> => {
    let total = 0;
    for (let round = 0; round < 100; round++) {
      const docs = (await model.find({ ...opts.filter, outboxPending: true }, { _id: 1, pendingEvents: 1, outboxSeq: 1, outboxDelete: 1 }).limit(500).lean()) as OutboxDoc[];
      if (!docs.length) break;
      await publishAndClear(docs);
      total += docs.length;
      if (docs.length < 500) break;
    }
    return total;
  };

  const interval = setInterval(() => {
    running = running.then(() => sweep().then(() => undefined)).catch((err) => log.warn({ err }, 'outbox sweep failed'));
  }, opts.intervalMs ?? 5_000);
  interval.unref();

  return {
    flush(doc) {
      queue.push(doc);
      schedule();
    },
    sweep,
    exclusive: (ids, write) => lock.run(ids, write),
    async stop() {
      stopped = true;
      clearInterval(interval);
      if (timer) {
        clearTimeout(timer);
        timer = undefined;
      }
      running = running.then(drain);
      await running;
      await Promise.all(clearing);
    },
  };
}

export { mongoose };
export * from './batched-insert';
export type { Connection, Model };
