import type { Model } from 'mongoose';

export interface BatchedInsertOptions {
  /** Documents per insertMany (FerretDB writes 100 a statement by default). */
  maxBatch?: number;
  /** insertMany commands running at once; what arrives meanwhile waits and goes in the next one. */
  maxInFlight?: number;
  /** How many ids just inserted are remembered, to answer a replay of one without writing. */
  remember?: number;
}

export interface BatchedInserts<D> {
  /** Inserts `doc` with others arriving at the same time. `created: false` when its `_id` is already stored. */
  insert(doc: D): Promise<{ created: boolean }>;
}

interface Item<D> {
  doc: D;
  resolve(r: { created: boolean }): void;
  reject(err: unknown): void;
}

const DUPLICATE_KEY = 11000;

/**
 * Group commit of single-document inserts: documents that arrive while the database is busy (or in the same turn of
 * the event loop) are written with one unordered `insertMany`, and each caller learns its own outcome (a duplicate
 * `_id` is `created: false`, any other error rejects only that caller). A Mongo-wire server that meets a duplicate
 * inside a multi-row insert may redo the whole batch row by row (FerretDB does), so ids known to be stored already
 * (inserted here lately) never enter a batch, and a second copy of an id within one batch waits for the first.
 */
export function batchedInserts<D extends { _id: string }>(model: Model<any>, opts: BatchedInsertOptions = {}): BatchedInserts<D> {
  const maxBatch = opts.maxBatch ?? 100;
  const maxInFlight = opts.maxInFlight ?? 2;
  const remember = opts.remember ?? 10_000;
  let queue: Array<Item<D>> = [];
  let inFlight = 0;
  let scheduled = false;
  /** Ids inserted lately (oldest first), and ids in a batch being written. */
  const stored = new Set<string>();
  const writing = new Map<string, Promise<{ created: boolean }>>();

  const remembered = (id: string) => {
    stored.add(id);
    if (stored.size > remember) stored.delete(stored.values().next().value as string);
  };

  const write = async (batch: Array<Item<D>>) => {
    let failed = new Map<number, { code?: number }>();
    let whole: unknown;
    try {
      await model.collection.insertMany(
        batch.map((i) => i.doc as never),
        { ordered: false },
      );
    } catch (err) {
      const writeErrors = (err as { writeErrors?: Array<{ index: number; code?: number }> | { index: number; code?: number } }).writeErrors;
      const list = writeErrors === undefined ? undefined : Array.isArray(writeErrors) ? writeErrors : [writeErrors];
      if (list?.length) failed = new Map(list.map((e) => [e.index, e]));
      else whole = err;
    }
    batch.forEach((item, index) => {
      if (whole !== undefined) return item.reject(whole);
      const e = failed.get(index);
      if (!e) {
        remembered(item.doc._id);
        return item.resolve({ created: true });
      }
      if (e.code === DUPLICATE_KEY) {
        remembered(item.doc._id);
        return item.resolve({ created: false });
      }
      item.reject(Object.assign(new Error(`insert failed (code ${e.code ?? 'unknown'})`), e));
    });
  };

  const flush = () => {
    scheduled = false;
    while (queue.length && inFlight < maxInFlight) {
      const batch = queue.splice(0, maxBatch);
      inFlight++;
      void write(batch).finally(() => {
        inFlight--;
        for (const i of batch) if (writing.get(i.doc._id)) writing.delete(i.doc._id);
        if (queue.length) schedule();
      });
    }
  };

  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(flush);
  };

  const insert = (doc: D): Promise<{ created: boolean }> => {
    if (stored.has(doc._id)) return Promise.resolve({ created: false });
    const first = writing.get(doc._id);
    // A second copy of an id being written: a duplicate once the first is stored; otherwise it tries on its own.
    if (first) return first.then(() => ({ created: false }), () => insert(doc));
    const p = new Promise<{ created: boolean }>((resolve, reject) => queue.push({ doc, resolve, reject }));
    writing.set(doc._id, p);
    schedule();
    return p;
  };

  return { insert };
}
