import type { StoredPendingEvent } from '@platform/contracts';
import type { Publisher } from '@platform/bus';
import { getLogger } from '@platform/logger';
import { histogram } from '@platform/telemetry';
import { deleteTogether } from './delete-together';

const log = getLogger('mongo.group-commit');

/** `group_commit_seconds{collection}` (one insertMany, round trip) and `group_commit_documents{collection}` (its size). */
const insertSeconds = () => histogram('group_commit_seconds', 'Time of one group-committed insertMany', ['collection'], [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1]);
const batchDocuments = () => histogram('group_commit_documents', 'Documents in one group-committed insertMany', ['collection'], [1, 2, 4, 8, 16, 32, 64, 100]);

/** What became of one document handed to a group insert. */
export type GroupInsertOutcome = 'inserted' | 'duplicate';

/** The methods of a driver collection a group insert needs. */
export interface GroupCollection {
  /** For the metrics' `collection` label. */
  collectionName?: string;
  insertMany(docs: never[], options: { ordered: boolean }): Promise<unknown>;
  deleteOne(filter: never): Promise<unknown>;
  deleteMany(filter: never): Promise<unknown>;
  find(filter: never, options?: never): { limit(n: number): { toArray(): Promise<unknown[]> } };
}

export interface GroupInsertOptions<D = unknown> {
  /** Documents per insertMany at most (FerretDB turns 100 into one multi-row INSERT). */
  maxBatch?: number;
  /** insertMany commands in flight at once; while they run, the next batch gathers. */
  maxInFlight?: number;
  /** The markers of published batches are deleted together, this long after the first of them (ms). */
  markerDeleteMs?: number;
  /**
   * Batch outbox: documents carry `pendingEvents` (event id -> entry) that must reach JetStream if and only if the
   * document is stored. Each batch is written together with one marker document; once the inserted documents' events
   * are published, the marker is deleted. A marker left behind (a crash) is found by `sweep`, which publishes its
   * batch's events again (JetStream drops the ones already published, by event id).
   */
  outbox?: {
    publisher: Publisher;
    instance: string;
    onPublished?: (n: number) => void;
    /**
     * The events of a stored document that was inserted with its events beside it rather than in its `pendingEvents`
     * (the sweep rebuilds them from the row: storing a copy of each event in its row cost the insert about a third).
     */
    eventsOf?: (stored: D) => StoredPendingEvent[];
  };
}

interface Waiting<D> {
  doc: D;
  /** The document's events when they are not stored in it (`insert(doc, events)`). */
  events?: StoredPendingEvent[];
  resolve(outcome: GroupInsertOutcome): void;
  reject(err: unknown): void;
}

interface WriteErrorLike {
  index: number;
  code?: number;
  err?: { index: number; code?: number };
}

/**
 * The rows the server reported as failed, or undefined when the error says nothing row by row. The driver wraps a
 * network error during insertMany in a bulk write error with an empty `writeErrors`: then no row is known to be
 * stored (the connection may have died before or after the commit), and taking the empty list as "none failed"
 * would answer 201 for rows that were never written (found by `pnpm chaos`, database restart row).
 */
function writeErrorsOf(err: unknown): Array<{ index: number; code?: number }> | undefined {
  const we = (err as { writeErrors?: WriteErrorLike[] | WriteErrorLike })?.writeErrors;
  if (!we) return undefined;
  const list = Array.isArray(we) ? we : [we];
  if (list.length === 0) return undefined;
  return list.map((e) => ({ index: e.err?.index ?? e.index, code: e.err?.code ?? e.code }));
}

/** Marker `_id`s sort apart from every scoped id (`tenant:project:id`). */
const MARKER_PREFIX = '~outbox~';

interface Marker {
  _id: string;
  outboxMarker: true;
  createdAt: Date;
  /** The `_id`s of the batch's documents (markers of earlier releases have none: their batch is found by `outboxBatch`). */
  ids?: string[];
}

type WithOutbox = { _id: unknown; pendingEvents?: Record<string, StoredPendingEvent>; outboxBatch?: string | null };

/**
 * Group commit: documents inserted by concurrent callers within the same moment go to the database as one unordered
 * insertMany. Each caller learns whether its document was inserted or its `_id` was already there (a replay), so an
 * idempotent create stays exactly as it was, only cheaper: one command and one round trip for a whole batch.
 *
 * Two copies of one `_id` in the same batch are sent once; the second learns `duplicate`. A batch is never held back
 * by a timer: it is sent as soon as a command slot is free, and whatever arrives while the commands run forms the next.
 *
 * With `outbox`, the events of the inserted documents are published after the insert (callers are answered first),
 * and the batch's marker is deleted with the others published in the same moment: a marker row per batch and a delete
 * per moment instead of one update per document (an update of a document costs FerretDB several times its insert;
 * measured in docs/performance.md, "Write each row once").
 */
export function groupInsert<D extends WithOutbox>(collection: () => GroupCollection, opts: GroupInsertOptions<D> = {}) {
  const maxBatch = opts.maxBatch ?? 100;
  const maxInFlight = opts.maxInFlight ?? 2;
  let queue: Array<Waiting<D>> = [];
  /** The batches being written: each settles once its documents' callers are answered and its publish is queued. */
  const sending = new Set<Promise<void>>();
  let scheduled = false;
  let seq = 0;
  /** Publishes run one after another, in the order the batches were stored. */
  let publishing: Promise<void> = Promise.resolve();

  /**
   * Markers whose events are out, deleted together: one deleteMany a moment (`markerDeleteMs`) instead of a delete per
   * batch, which at a few events a batch was as many commands as the inserts. The filter's `outboxMarker: true` is an
   * equality the database serves (FerretDB v1 applies an `_id: {$in}` alone to every row itself).
   */
  const markers = deleteTogether(collection, {
    delayMs: opts.markerDeleteMs ?? 100,
    filterOf: (ids) => ({ outboxMarker: true, _id: { $in: ids } }),
    onError: (err, count) => log.warn({ err, markers: count }, 'deleting published batch markers failed; the sweep will take them'),
  });
  const publishBatch = (markerId: string, inserted: Array<Waiting<D>>) => {
    const outbox = opts.outbox!;
    const events = inserted.flatMap((w) => w.events ?? Object.values(w.doc.pendingEvents ?? {}));
    publishing = publishing
      .then(async () => {
        if (events.length) await outbox.publisher.publishPending(events);
        if (events.length) outbox.onPublished?.(events.length);
        // The marker goes once its events are out; the next batch's publish does not wait for this database write
        // (it held every later event back by a delete's time; a marker whose delete fails is swept, its events
        // published again and dropped as repeats by JetStream).
        markers.add(markerId);
      })
      .catch((err) => log.warn({ err, markerId, count: events.length }, 'publishing a batch failed; the sweep will retry'));
  };

  const send = async (batch: Array<Waiting<D>>) => {
    // one document per _id; later copies follow the first one's fate
    const first = new Map<string, Waiting<D>>();
    const copies: Array<{ of: string; w: Waiting<D> }> = [];
    for (const w of batch) {
      const key = String(w.doc._id);
      if (first.has(key)) copies.push({ of: key, w });
      else first.set(key, w);
    }
    const unique = [...first.values()];
    const outcome = new Map<string, { ok: GroupInsertOutcome } | { err: unknown }>();
    let marker: Marker | undefined;
    let docs: unknown[] = unique.map((w) => w.doc);
    if (opts.outbox) {
      const batchId = `${opts.outbox.instance}:${++seq}`;
      marker = { _id: `${MARKER_PREFIX}${batchId}`, outboxMarker: true, createdAt: new Date(), ids: unique.map((w) => String(w.doc._id)) };
      for (const w of unique) w.doc.outboxBatch = batchId;
      docs = [marker, ...docs];
    }
    const offset = marker ? 1 : 0;
    const col = collection();
    const labels = { collection: col.collectionName ?? '' };
    batchDocuments().observe(labels, docs.length);
    const timer = insertSeconds().startTimer(labels);
    try {
      await col.insertMany(docs as never[], { ordered: false });
      timer();
      for (const w of unique) outcome.set(String(w.doc._id), { ok: 'inserted' });
    } catch (err) {
      const errors = writeErrorsOf(err);
      if (!errors) {
        for (const w of unique) outcome.set(String(w.doc._id), { err });
      } else {
        const failed = new Map(errors.map((e) => [e.index, e.code]));
        unique.forEach((w, i) => {
          const code = failed.get(i + offset);
          const key = String(w.doc._id);
          if (!failed.has(i + offset)) outcome.set(key, { ok: 'inserted' });
          else if (code === 11000) outcome.set(key, { ok: 'duplicate' });
          else outcome.set(key, { err });
        });
      }
    }
    for (const w of unique) {
      const o = outcome.get(String(w.doc._id))!;
      if ('ok' in o) w.resolve(o.ok);
      else w.reject(o.err);
    }
    for (const { of, w } of copies) {
      const o = outcome.get(of)!;
      if ('ok' in o) w.resolve('duplicate');
      else w.reject(o.err);
    }
    if (marker) {
      const inserted = unique.filter((w) => (outcome.get(String(w.doc._id)) as { ok?: GroupInsertOutcome }).ok === 'inserted');
      publishBatch(marker._id, inserted);
    }
  };

  const pump = () => {
    scheduled = false;
    while (queue.length && sending.size < maxInFlight) {
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      const job: Promise<void> = send(batch).finally(() => {
        sending.delete(job);
        if (queue.length) schedule();
      });
      sending.add(job);
    }
  };

  // Callers that arrive in the same turn of the event loop (the requests of one socket read) share a batch.
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(pump);
  };

  return {
    /**
     * Inserts `doc`. With the outbox, its events are `events` when given (not stored: the sweep rebuilds them with
     * `eventsOf`), else the ones in its `pendingEvents`.
     */
    insert(doc: D, events?: StoredPendingEvent[]): Promise<GroupInsertOutcome> {
      return new Promise<GroupInsertOutcome>((resolve, reject) => {
        queue.push({ doc, events, resolve, reject });
        schedule();
      });
    },

    /**
     * Republishes the events of batches whose marker is older than `olderThanMs` (their writer died between the insert
     * and the publish), then deletes the markers. Returns how many events were published.
     */
    async sweep(olderThanMs = 10_000): Promise<number> {
      if (!opts.outbox) return 0;
      const outbox = opts.outbox;
      let published = 0;
      const markers = (await collection().find({ outboxMarker: true } as never).limit(1000).toArray()) as Marker[];
      for (const m of markers) {
        if (Date.now() - new Date(m.createdAt).getTime() < olderThanMs) continue;
        const batchId = m._id.slice(MARKER_PREFIX.length);
        // By the marker's `_id`s, with the batch id as an equality the database can serve (FerretDB v1 applies an
        // `_id: {$in}` alone to every row itself); markers of earlier releases list no ids.
        const filter = m.ids ? { _id: { $in: m.ids }, outboxBatch: batchId } : { outboxBatch: batchId };
        const options = outbox.eventsOf ? {} : { projection: { pendingEvents: 1 } };
        const docs = (await collection().find(filter as never, options as never).limit(10_000).toArray()) as D[];
        const events = docs.flatMap((d) => (d.pendingEvents ? Object.values(d.pendingEvents) : (outbox.eventsOf?.(d) ?? [])));
        if (events.length) await outbox.publisher.publishPending(events);
        await collection().deleteOne({ _id: m._id } as never);
        published += events.length;
      }
      return published;
    },

    /** Waits until every batch stored so far has been published. */
    async flush(): Promise<void> {
      for (;;) {
        // What waits for a free slot is sent now rather than on the next turn, so there is always a batch to wait for.
        if (queue.length && sending.size < maxInFlight) pump();
        if (!sending.size) break;
        await Promise.allSettled(sending);
      }
      await publishing;
      await markers.flush();
    },

    /** Documents waiting to be written (for metrics). */
    get pending(): number {
      return queue.length;
    },
  };
}
