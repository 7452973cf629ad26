import type { Model } from 'mongoose';
import { unlessDuplicate } from './errors';
import { scoped, scopedId } from './scope';

/*
 * The reads and writes most repositories make on their records, written once: a page of a list and its total, an insert
 * that reports a taken id, a write conditional on the record's `revision`, and the three together for a project's
 * records (`projectRecords`).
 */

/** What a page lists: the records `filter` matches, in `sort`'s order, with `projection` (fields left out or kept). */
export interface PageQuery {
  filter: Record<string, unknown>;
  sort: Record<string, 1 | -1>;
  projection?: Record<string, number>;
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
 * One page of a sorted list and the list's total, the way every list of the platform is read. The total is counted
 * only when the rows read do not tell it: a short read (every page of a small list, and the last page of any) already
 * tells it exactly, so most list calls are one query.
 */
export async function listPage<T, R = T>(
  model: Model<T>,
  query: PageQuery,
  page: number,
  limit: number,
  opts: ListPageOptions = {},
): Promise<{ rows: R[]; total: number }> {
  const skip = (page - 1) * limit;
  const ahead = Math.max(limit, opts.readAhead ?? limit);
  const read = await model.find(query.filter, query.projection).sort(query.sort).skip(skip).limit(ahead).lean<R[]>();
  const rows = read.length > limit ? read.slice(0, limit) : read;
  if (read.length < ahead && (read.length > 0 || page === 1)) return { rows, total: skip + read.length };
  return { rows, total: await (opts.total ?? (() => model.countDocuments(query.filter)))() };
}

/** Inserts `doc` (its `_id` already set); null when the `_id` is taken. */
export async function insertUnlessTaken<T, D extends { _id: string }>(model: Model<T>, doc: D): Promise<D | null> {
  return (await unlessDuplicate(() => model.create(doc))) ? doc : null;
}

/**
 * Applies `set` and the next revision only if nobody changed the record since `current` was read; the record as
 * written, or null when its revision moved on (or it is gone).
 */
export async function updateAtRevision<T, D extends { _id: string; revision: number }>(
  model: Model<T>,
  current: D,
  set: Partial<D>,
): Promise<D | null> {
  return model
    .findOneAndUpdate(
      { _id: current._id, revision: current.revision },
      { $set: { ...set, revision: current.revision + 1 } },
      { new: true },
    )
    .lean<D>();
}

/** What `projectRecords` needs of a record: keyed in its project by `id`, versioned by `revision`. */
interface ProjectRecord {
  _id: string;
  id: string;
  tenantId: string;
  projectId: string;
  revision: number;
}

/**
 * The reads and writes of a collection of a project's records stored under `<tenant>:<project>:<id>` (`scopedId`)
 * with a `revision`: `insert` (null when the id is taken in the project), `findById` and `update` (at the revision the
 * caller read; null when it moved on). `D` is the record as the domain sees it.
 */
export function projectRecords<T, D extends ProjectRecord>(model: Model<T>) {
  return {
    async insert(doc: Omit<D, '_id'>): Promise<D | null> {
      const key = doc as unknown as Omit<ProjectRecord, '_id'>;
      return insertUnlessTaken(model, { _id: scopedId(key, key.id), ...doc } as unknown as D);
    },
    async findById(scope: { tenantId: string; projectId: string }, id: string): Promise<D | null> {
      return model.findOne({ _id: scopedId(scope, id), ...scoped(scope) }).lean<D>();
    },
    async update(current: D, set: Partial<D>): Promise<D | null> {
      return updateAtRevision(model, current, set);
    },
  };
}
