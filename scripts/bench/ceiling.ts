// The physical limit: what the database does for the MongoDB driver alone, no service in between, measured in the
// same run and against the same database as the service rows, so each database path reads as a fraction of it.
import { randomUUID } from 'node:crypto';
import { connectAs, withDatabase } from '@platform/testkit';
import { percentiles } from './load';

export interface LoopSettings {
  durationS: number;
  warmupS: number;
  runs: number;
}

export interface LoopResult {
  /** Operations (or documents, see `perOp`) per second of the median run. */
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  unexpected: number;
  runs: number;
}

/** `concurrency` callers run `op` back to back for `seconds`; returns operations/s and latency percentiles. */
async function loopOnce(
  concurrency: number,
  seconds: number,
  op: (worker: number) => Promise<unknown>,
): Promise<{ ops: number; times: number[]; errors: number }> {
  const until = performance.now() + seconds * 1000;
  const times: number[] = [];
  let errors = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      while (performance.now() < until) {
        const s = performance.now();
        try {
          await op(w);
          times.push(performance.now() - s);
        } catch {
          errors++;
        }
      }
    }),
  );
  return { ops: times.length / ((performance.now() - t0) / 1000), times, errors };
}

/** Warm-up, then `runs` runs; the median run (by throughput) is reported. `perOp` scales operations to documents. */
export async function measureLoop(
  concurrency: number,
  settings: LoopSettings,
  op: (worker: number) => Promise<unknown>,
  perOp = 1,
): Promise<LoopResult> {
  if (settings.warmupS > 0) await loopOnce(concurrency, settings.warmupS, op);
  const results: Array<{ ops: number; times: number[]; errors: number }> = [];
  for (let i = 0; i < settings.runs; i++) results.push(await loopOnce(concurrency, settings.durationS, op));
  const sorted = [...results].sort((a, b) => a.ops - b.ops);
  const chosen = sorted[Math.floor(sorted.length / 2)]!;
  const p = percentiles(chosen.times);
  const round = (x: number) => Math.round(x * 10) / 10;
  return {
    rps: chosen.ops * perOp,
    p50: round(p.p50),
    p99: round(p.p99),
    errors: results.reduce((n, r) => n + r.errors, 0),
    unexpected: 0,
    runs: settings.runs,
  };
}

/**
 * A run event document as the API gives it, every field (`null`s and `updatedAt` too) and `_id` as the events table
 * keys it. The events table's own rows are smaller (packed: docs/performance.md, "The event row packed"): a saving of
 * the design that the ceiling rows do not get.
 */
function eventLike(i: number) {
  const id = randomUUID();
  const now = new Date();
  return {
    _id: `raw-tenant:p-raw:${id}`,
    id,
    tenantId: 'raw-tenant',
    projectId: 'p-raw',
    type: 'bench.event',
    agentId: 'agent-1',
    conversationId: 'c-1',
    messageId: null,
    properties: { n: i },
    userProperties: { id: 'u-1' },
    metadata: null,
    serverMetadata: { authMethod: 'apiKey' },
    createdAt: now,
    updatedAt: now,
  };
}

/** Runs one more measurement and answers how many operations it made (the caller reads the CPU around it). */
export type CpuRun = (run: () => Promise<number>) => Promise<void>;

export interface Ceilings {
  insertOne: LoopResult;
  insertMany: LoopResult;
  updateOne: LoopResult;
}

/** The ceilings' events collection, as withDatabase's driver gives it. */
type RawEvents = ReturnType<Parameters<Parameters<typeof withDatabase>[2]>[0]['collection']>;

/**
 * The ceilings' own events collection (`<prefix>_raw.runEvents`), with the indexes events-ingest's `runEvents` has in
 * this run (it created them at start), open for `use` on a pool of `concurrency` connections.
 */
async function withRawEvents<T>(
  mongoUrl: string,
  dbPrefix: string,
  concurrency: number,
  use: (col: RawEvents) => Promise<T>,
): Promise<T> {
  const indexes = await withDatabase(
    mongoUrl,
    'events-ingest',
    async (db) => (await db.collection('runEvents').listIndexes().toArray()).filter((i) => i.name !== '_id_'),
    dbPrefix,
  );
  if (!indexes.length)
    throw new Error('events-ingest has no runEvents indexes in this run: start the stack before the ceilings');
  return withDatabase(
    mongoUrl,
    'raw',
    async (db) => {
      await db.createCollection('runEvents').catch(() => undefined);
      const col = db.collection<Record<string, unknown>>('runEvents');
      for (const i of indexes)
        await col.createIndex(i.key, { ...(i.sparse ? { sparse: true } : {}), ...(i.unique ? { unique: true } : {}) });
      return use(col);
    },
    dbPrefix,
    concurrency,
  );
}

let inserted = 0;
const insertOneOf = (col: RawEvents) => () => col.insertOne(eventLike(inserted++) as never);

/**
 * The write ceilings, in the ceilings' own events collection (withRawEvents): insertOne from `concurrency` callers
 * (documents/s), insertMany of 100 documents from one caller (documents/s), updateOne by `_id` from `concurrency`
 * callers over the documents just inserted (updates/s).
 */
export async function writeCeilings(
  mongoUrl: string,
  dbPrefix: string,
  settings: LoopSettings,
  concurrency = 50,
  /** Called with one more run of insertOne and of insertMany (each answers the documents inserted), for CPU accounting. */
  around?: { insertOne?: CpuRun; insertMany?: CpuRun },
): Promise<Ceilings> {
  return withRawEvents(mongoUrl, dbPrefix, concurrency, async (col) => {
    const one = insertOneOf(col);
    const insertOne = await measureLoop(concurrency, settings, one);
    await around?.insertOne?.(async () => (await loopOnce(concurrency, settings.durationS, one)).times.length);
    const many = () =>
      col.insertMany(Array.from({ length: 100 }, () => eventLike(inserted++)) as never[], { ordered: false });
    const insertMany = await measureLoop(1, settings, many, 100);
    await around?.insertMany?.(async () => (await loopOnce(1, settings.durationS, many)).times.length * 100);
    const ids = (
      await col
        .find({}, { projection: { _id: 1 } })
        .limit(5000)
        .toArray()
    ).map((d) => d._id);
    let u = 0;
    const updateOne = await measureLoop(concurrency, settings, () =>
      col.updateOne({ _id: ids[u++ % ids.length] as never }, { $set: { updatedAt: new Date() } }),
    );
    return { insertOne, insertMany, updateOne };
  });
}

/**
 * The insertOne ceiling again, for measuring beside a row read against it: `use` gets `run(seconds)`, one run of
 * insertOne from `concurrency` callers (documents/s), after a warm-up of `warmupS` that opens the pool's connections.
 */
export async function withInsertOneRuns<T>(
  mongoUrl: string,
  dbPrefix: string,
  concurrency: number,
  warmupS: number,
  use: (run: (seconds: number) => Promise<number>) => Promise<T>,
): Promise<T> {
  return withRawEvents(mongoUrl, dbPrefix, concurrency, async (col) => {
    const one = insertOneOf(col);
    if (warmupS > 0) await loopOnce(concurrency, warmupS, one);
    return use(async (seconds) => (await loopOnce(concurrency, seconds, one)).ops);
  });
}

/** A find run by `concurrency` callers in a service's own database (the read a list endpoint makes), finds/s. */
export async function findCeiling(
  mongoUrl: string,
  dbPrefix: string,
  service: string,
  collection: string,
  query: {
    filter: Record<string, unknown>;
    sort: Record<string, 1 | -1>;
    limit: number;
    projection?: Record<string, number>;
  },
  settings: LoopSettings,
  concurrency: number,
): Promise<LoopResult & { returned: number }> {
  return withDatabase(
    mongoUrl,
    service,
    async (db) => {
      const col = db.collection(collection);
      const find = () =>
        col.find(query.filter, { projection: query.projection }).sort(query.sort).limit(query.limit).toArray();
      const returned = (await find()).length;
      return { ...(await measureLoop(concurrency, settings, find)), returned };
    },
    dbPrefix,
    concurrency,
  );
}

/**
 * JetStream publishes from `concurrency` callers (messages/s) into a file-backed stream of their own, each with its own
 * `Nats-Msg-Id` and a body shaped like an `event.created`: the share of a new event that the stream takes (events-ingest
 * publishes every stored event the same way). No consumer reads the stream.
 */
export async function publishCeiling(
  natsUrl: string,
  runId: string,
  settings: LoopSettings,
  concurrency = 50,
  around?: CpuRun,
): Promise<LoopResult> {
  const nc = await connectAs(natsUrl, 'admin', { name: 'bench-publish-ceiling' });
  const stream = `BENCH_RAW_${runId.toUpperCase()}`;
  const jsm = await nc.jetstreamManager();
  try {
    await jsm.streams.add({
      name: stream,
      subjects: [`bench-raw.${runId}.>`],
      storage: 'file' as never /* StorageType.File; nats is not a dependency of the root */,
      duplicate_window: 120 * 1e9,
    });
    const js = nc.jetstream();
    const encoder = new TextEncoder();
    let n = 0;
    const publish = () => {
      const event = eventLike(n++);
      const body = encoder.encode(
        JSON.stringify({
          id: randomUUID(),
          type: 'event.created',
          occurredAt: event.createdAt,
          tenantId: event.tenantId,
          projectId: event.projectId,
          data: event,
        }),
      );
      return js.publish(`bench-raw.${runId}.${event.tenantId}.${event.projectId}.event.created`, body, {
        msgID: event.id,
      });
    };
    const result = await measureLoop(concurrency, settings, publish);
    await around?.(async () => (await loopOnce(concurrency, settings.durationS, publish)).times.length);
    return result;
  } finally {
    await jsm.streams.delete(stream).catch(() => false);
    await nc.close();
  }
}
