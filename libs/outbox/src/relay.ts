import type { Model, UpdateQuery } from 'mongoose';
import type { StoredPendingEvent } from '@platform/contracts';
import type { Publisher } from '@platform/bus';
import { getLogger } from '@platform/logger';
import { KeyedLock } from './lock';

const log = getLogger('outbox');

/** The outbox fields the relay reads, as any model with `outboxFields` stores them (null where a value was cleared). */
export interface OutboxDoc {
  _id: unknown;
  outboxSeq?: number | null;
  outboxDelete?: boolean | null;
  pendingEvents?: Record<string, StoredPendingEvent>;
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
export function outboxRelay<T extends OutboxDoc>(
  model: Model<T>,
  pub: Publisher,
  opts: { intervalMs?: number; batchMs?: number; onPublished?: (n: number) => void; /** Sweep only these documents (e.g. one partition). */ filter?: Record<string, unknown> } = {},
): OutboxRelay {
  const queue: OutboxDoc[] = [];
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
   * docs/performance.md, "Write each row once").
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
    const groups = new Map<string, { del: boolean; seq: number | null | undefined; ids: unknown[] }>();
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
      // Dotted paths into the map are not keys of T, which UpdateQuery<T> cannot tell from a mistake.
      if (Object.keys(keys).length) await model.updateMany({ _id: { $in: appended }, outboxPending: true }, { $unset: keys } as UpdateQuery<T>);
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
