import type { StoredPendingEvent } from '@platform/contracts';
import { histogram } from '@platform/telemetry';

/** `group_commit_seconds{collection}` (one insertMany, round trip) and `group_commit_documents{collection}` (its size). */
const insertSeconds = () =>
  histogram(
    'group_commit_seconds',
    'Time of one group-committed insertMany',
    ['collection'],
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
  );
const batchDocuments = () =>
  histogram(
    'group_commit_documents',
    'Documents in one group-committed insertMany',
    ['collection'],
    [1, 2, 4, 8, 16, 32, 64, 100],
  );

/** What became of one document handed to an insert. */
export type InsertOutcome = 'inserted' | 'duplicate';

/** The methods of a driver collection the outbox uses. */
export interface OutboxCollection {
  /** For the metrics' `collection` label. */
  collectionName?: string;
  insertMany(docs: never[], options: { ordered: boolean; ignoreUndefined: boolean }): Promise<unknown>;
  deleteOne(filter: never): Promise<unknown>;
  deleteMany(filter: never): Promise<unknown>;
  find(filter: never, options?: never): { limit(n: number): { toArray(): Promise<unknown[]> } };
}

export type Row = { _id: string; outboxBatch?: string | null };

/** One document waiting for its batch, with its events (already in their stored form), and its caller. */
export interface Waiting<D extends Row> {
  doc: D;
  events: StoredPendingEvent[];
  resolve(outcome: InsertOutcome): void;
  reject(err: unknown): void;
}

export interface GroupCommitOptions<D extends Row> {
  /** Documents per insertMany at most (FerretDB turns 100 into one multi-row INSERT). */
  maxBatch: number;
  /** insertMany commands in flight at once; while they run, the next batch gathers. */
  maxInFlight: number;
  /** Extra documents written first in the batch's insertMany (the marker of a batch with events), given its documents. */
  lead(batch: Array<Waiting<D>>): Row[];
  /** After a batch's callers are answered: the documents it inserted (their events are to be published). */
  stored(lead: Row[], inserted: Array<Waiting<D>>): void;
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

type Outcome = { ok: InsertOutcome } | { err: unknown };

/** Inserts `docs` after `lead` in one unordered insertMany: what became of each of `docs`. */
async function insertAll(col: OutboxCollection, lead: Row[], docs: Row[]): Promise<Outcome[]> {
  const labels = { collection: col.collectionName ?? '' };
  batchDocuments().observe(labels, lead.length + docs.length);
  const timer = insertSeconds().startTimer(labels);
  try {
    await col.insertMany([...lead, ...docs] as never[], { ordered: false, ignoreUndefined: true });
    timer();
    return docs.map(() => ({ ok: 'inserted' }));
  } catch (err) {
    const errors = writeErrorsOf(err);
    if (!errors) return docs.map(() => ({ err }));
    const failed = new Map(errors.map((e) => [e.index, e.code]));
    return docs.map((_, i) => {
      const at = i + lead.length;
      if (!failed.has(at)) return { ok: 'inserted' };
      return failed.get(at) === 11000 ? { ok: 'duplicate' } : { err };
    });
  }
}

/** Answers each caller of `batch`: the first copy of an `_id` learns its outcome, later copies `duplicate` (or its error). */
function answer<D extends Row>(
  unique: Array<Waiting<D>>,
  copies: Array<{ of: number; w: Waiting<D> }>,
  outcomes: Outcome[],
): void {
  unique.forEach((w, i) => {
    const o = outcomes[i]!;
    if ('ok' in o) w.resolve(o.ok);
    else w.reject(o.err);
  });
  for (const { of, w } of copies) {
    const o = outcomes[of]!;
    if ('ok' in o) w.resolve('duplicate');
    else w.reject(o.err);
  }
}

/**
 * Group commit: documents inserted by concurrent callers within the same moment go to the database as one unordered
 * insertMany. Each caller learns whether its document was inserted or its `_id` was already there (a replay), so an
 * idempotent create stays exactly as it was, only cheaper: one command and one round trip for a whole batch.
 *
 * Two copies of one `_id` in the same batch are sent once; the second learns `duplicate`. A batch is never held back
 * by a timer: it is sent as soon as a command slot is free, and whatever arrives while the commands run forms the next.
 */
export function groupCommit<D extends Row>(collection: () => OutboxCollection, opts: GroupCommitOptions<D>) {
  let queue: Array<Waiting<D>> = [];
  /** The batches being written: each settles once its callers are answered and its events handed on. */
  const sending = new Set<Promise<void>>();
  let scheduled = false;

  const send = async (batch: Array<Waiting<D>>) => {
    const first = new Map<string, number>();
    const unique: Array<Waiting<D>> = [];
    const copies: Array<{ of: number; w: Waiting<D> }> = [];
    for (const w of batch) {
      const at = first.get(w.doc._id);
      if (at === undefined) first.set(w.doc._id, unique.push(w) - 1);
      else copies.push({ of: at, w });
    }
    const lead = opts.lead(unique);
    const outcomes = await insertAll(
      collection(),
      lead,
      unique.map((w) => w.doc),
    );
    answer(unique, copies, outcomes);
    opts.stored(
      lead,
      unique.filter((_, i) => (outcomes[i] as { ok?: InsertOutcome }).ok === 'inserted'),
    );
  };

  const pump = () => {
    scheduled = false;
    while (queue.length && sending.size < opts.maxInFlight) {
      const batch = queue.slice(0, opts.maxBatch);
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
    insert(doc: D, events: StoredPendingEvent[]): Promise<InsertOutcome> {
      return new Promise<InsertOutcome>((resolve, reject) => {
        queue.push({ doc, events, resolve, reject });
        schedule();
      });
    },
    /** Waits until every document queued so far is written (its caller answered). */
    async drain(): Promise<void> {
      for (;;) {
        // What waits for a free slot is sent now rather than on the next turn, so there is always a batch to wait for.
        if (queue.length && sending.size < opts.maxInFlight) pump();
        if (!sending.size) return;
        await Promise.allSettled(sending);
      }
    },
    /** Documents waiting to be written. */
    get pending(): number {
      return queue.length;
    },
  };
}
