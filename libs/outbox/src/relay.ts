import type { Model, UpdateQuery } from 'mongoose';
import type { StoredPendingEvent } from '@platform/contracts';
import { getLogger } from '@platform/logger';
import type { KeyedLock } from './lock';

const log = getLogger('outbox');

/** The outbox fields the relay reads (null where a value was cleared). */
export interface OutboxDoc {
  _id: string;
  outboxSeq?: number | null;
  outboxDelete?: boolean | null;
  outboxBatch?: string | null;
  pendingEvents?: Record<string, StoredPendingEvent>;
}

export interface RelayDeps {
  lock: KeyedLock;
  /** Publishes, in order with every other publish of the collection. */
  publish(events: StoredPendingEvent[]): Promise<void>;
  /** Events of documents about to be deleted that their insert's batch has not published yet (see `remove`). */
  unpublishedOf(docs: OutboxDoc[]): Promise<StoredPendingEvent[]>;
}

/** Clears at once at most this many batches; a batch is at most this many documents. */
const MAX_CLEARS = 4;
const BATCH = 500;

/**
 * Clears what was just published. Few statements, each over many documents: some Mongo-wire servers (FerretDB) hold
 * one database connection per statement of a batched command until the whole command ends, so a bulkWrite of
 * hundreds of updates can exhaust their pool. Every statement also matches `outboxPending: true`: FerretDB v1 sends
 * only plain equality filters to its backend and applies an `$in` itself after reading every row of the collection,
 * so without it each flush read the whole collection (docs/performance.md, "Write each row once").
 */
async function clear(model: Model<any>, docs: OutboxDoc[]): Promise<void> {
  // Where nothing was written since the document was read (same outboxSeq), every entry was just published: the map
  // and the flag go in one statement per group (or the document is deleted).
  const groups = new Map<string, { del: boolean; seq: number | null | undefined; ids: string[] }>();
  for (const d of docs) {
    const key = `${d.outboxDelete ? 'd' : 'u'}:${d.outboxSeq ?? ''}`;
    const g = groups.get(key) ?? { del: Boolean(d.outboxDelete), seq: d.outboxSeq, ids: [] };
    g.ids.push(d._id);
    groups.set(key, g);
  }
  const appended: string[] = [];
  for (const g of groups.values()) {
    const filter = { _id: { $in: g.ids }, outboxPending: true, outboxSeq: g.seq };
    const done = g.del
      ? (await model.deleteMany(filter)).deletedCount
      : (await model.updateMany(filter, { $unset: { outboxPending: 1, pendingEvents: 1 } })).modifiedCount;
    if (done < g.ids.length) appended.push(...g.ids);
  }
  // Documents written again meanwhile (or cleared by another process): remove only the entries just published and
  // leave the flag for the next flush or the sweep. Entry keys are unique event ids, so unsetting their union is exact.
  if (appended.length) {
    const keys = Object.fromEntries(
      docs.flatMap((d) => Object.keys(d.pendingEvents ?? {})).map((k) => [`pendingEvents.${k}`, 1]),
    );
    // Dotted paths into the map are not keys of the document type, which UpdateQuery cannot tell from a mistake.
    if (Object.keys(keys).length)
      await model.updateMany({ _id: { $in: appended }, outboxPending: true }, { $unset: keys } as UpdateQuery<unknown>);
  }
}

/**
 * The events written in a changed document (an update or a removal): published with the event id as Nats-Msg-Id
 * (JetStream drops duplicates), only then cleared (or the document deleted). A crash between the two leaves the
 * document flagged; the sweep publishes it again.
 */
export function embeddedRelay(model: Model<any>, deps: RelayDeps) {
  const queue: OutboxDoc[] = [];
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const clearing = new Set<Promise<void>>();
  /**
   * Documents this process has handed to `flush` and not yet cleared (or failed to publish): the sweep leaves them to
   * it, or a core subscriber would see their events twice (JetStream itself drops the repeat).
   */
  const inHand = new Map<string, number>();
  const take = (docs: OutboxDoc[]) => {
    for (const d of docs) inHand.set(d._id, (inHand.get(d._id) ?? 0) + 1);
  };
  const letGo = (docs: OutboxDoc[]) => {
    for (const d of docs) {
      const n = (inHand.get(d._id) ?? 1) - 1;
      if (n > 0) inHand.set(d._id, n);
      else inHand.delete(d._id);
    }
  };

  const publish = async (docs: OutboxDoc[]) => {
    const removed = docs.filter((d) => d.outboxDelete && d.outboxBatch);
    const events = [
      ...(removed.length ? await deps.unpublishedOf(removed) : []),
      ...docs.flatMap((d) => Object.values(d.pendingEvents ?? {})),
    ];
    if (events.length) await deps.publish(events);
  };
  const clearLocked = (docs: OutboxDoc[]) =>
    deps.lock.run(
      docs.map((d) => d._id),
      () => clear(model, docs),
    );

  /**
   * Batches are published one after another (so events keep their order), and each batch's clear runs while the next
   * batch is published (up to MAX_CLEARS at once): on a slow database the clears, not the publishes, set the pace, and
   * waiting for each before publishing the next made events wait in the queue (measured: 1.2 s from insert to publish
   * at 50 events/s on a loaded machine). A clear that fails leaves its documents pending for the sweep.
   */
  const drain = async () => {
    while (queue.length) {
      const batch = queue.splice(0, BATCH);
      try {
        await publish(batch);
      } catch (err) {
        log.warn({ err, count: batch.length }, 'outbox publish failed; the sweep will retry');
        letGo(batch);
        continue;
      }
      while (clearing.size >= MAX_CLEARS) await Promise.race(clearing);
      const job: Promise<void> = clearLocked(batch)
        .catch((err) => log.warn({ err, count: batch.length }, 'outbox clear failed; the sweep will retry'))
        .finally(() => {
          clearing.delete(job);
          letGo(batch);
        });
      clearing.add(job);
    }
  };

  return {
    /** Publishes the events of a document just written, then clears them (batched, after the reply). */
    flush(doc: OutboxDoc): void {
      take([doc]);
      queue.push(doc);
      if (timer) return;
      timer = setTimeout(() => {
        timer = undefined;
        running = running.then(drain);
      }, 2);
    },
    /** Publishes and clears everything left flagged (at start and on a timer); how many documents. */
    async sweep(projection: Record<string, 1> | undefined): Promise<number> {
      let total = 0;
      for (let round = 0; round < 100; round++) {
        const found = (await model.find({ outboxPending: true }, projection).limit(BATCH).lean()) as OutboxDoc[];
        const docs = found.filter((d) => !inHand.has(d._id));
        if (!docs.length) break;
        await publish(docs);
        await clearLocked(docs);
        total += docs.length;
        if (found.length < BATCH) break;
      }
      return total;
    },
    /** Publishes what is queued and waits for every clear under way. */
    async flushAll(): Promise<void> {
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
