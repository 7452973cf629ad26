/** The one method of a driver collection a group insert needs. */
export interface InsertManyTarget {
  insertMany(docs: never[], options: { ordered: boolean }): Promise<unknown>;
}

/** What became of one document handed to a group insert. */
export type GroupInsertOutcome = 'inserted' | 'duplicate';

export interface GroupInsertOptions {
  /** Documents per insertMany at most (FerretDB turns 100 into one multi-row INSERT). */
  maxBatch?: number;
  /** insertMany commands in flight at once; while they run, the next batch gathers. */
  maxInFlight?: number;
}

interface Waiting<D> {
  doc: D;
  resolve(outcome: GroupInsertOutcome): void;
  reject(err: unknown): void;
}

interface WriteErrorLike {
  index: number;
  code?: number;
  err?: { index: number; code?: number };
}

interface BulkWriteErrorLike {
  writeErrors?: WriteErrorLike[] | WriteErrorLike;
}

function writeErrorsOf(err: unknown): Array<{ index: number; code?: number }> | undefined {
  const we = (err as BulkWriteErrorLike)?.writeErrors;
  if (!we) return undefined;
  const list = Array.isArray(we) ? we : [we];
  return list.map((e) => ({ index: e.err?.index ?? e.index, code: e.err?.code ?? e.code }));
}

/**
 * Group commit: documents inserted by concurrent callers within the same moment go to the database as one unordered
 * insertMany. Each caller learns whether its document was inserted or its `_id` was already there (a replay), so an
 * idempotent create stays exactly as it was, only cheaper: one command and one round trip for a whole batch.
 *
 * Two copies of one `_id` in the same batch are sent once; the second learns `duplicate`. A batch is never held back
 * by a timer: it is sent as soon as a command slot is free, and whatever arrives while the commands run forms the next.
 */
export function groupInsert<D extends { _id: unknown }>(collection: () => InsertManyTarget, opts: GroupInsertOptions = {}) {
  const maxBatch = opts.maxBatch ?? 100;
  const maxInFlight = opts.maxInFlight ?? 2;
  let queue: Array<Waiting<D>> = [];
  let inFlight = 0;
  let scheduled = false;

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
    try {
      await collection().insertMany(unique.map((w) => w.doc) as never[], { ordered: false });
      for (const w of unique) outcome.set(String(w.doc._id), { ok: 'inserted' });
    } catch (err) {
      const errors = writeErrorsOf(err);
      if (!errors) {
        for (const w of unique) outcome.set(String(w.doc._id), { err });
      } else {
        const failed = new Map(errors.map((e) => [e.index, e.code]));
        unique.forEach((w, i) => {
          const code = failed.get(i);
          const key = String(w.doc._id);
          if (!failed.has(i)) outcome.set(key, { ok: 'inserted' });
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
  };

  const pump = () => {
    scheduled = false;
    while (queue.length && inFlight < maxInFlight) {
      const batch = queue.slice(0, maxBatch);
      queue = queue.slice(batch.length);
      inFlight++;
      void send(batch).finally(() => {
        inFlight--;
        if (queue.length) schedule();
      });
    }
  };

  // Callers that arrive in the same turn of the event loop (the requests of one socket read) share a batch.
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(pump);
  };

  return {
    insert(doc: D): Promise<GroupInsertOutcome> {
      return new Promise<GroupInsertOutcome>((resolve, reject) => {
        queue.push({ doc, resolve, reject });
        schedule();
      });
    },
    /** Documents waiting or being written (for tests and metrics). */
    get pending(): number {
      return queue.length;
    },
  };
}
