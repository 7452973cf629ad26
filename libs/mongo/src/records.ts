import type { Model } from 'mongoose';
import { unlessDuplicate } from './errors';
import { scoped, scopedId } from './scope';

/*
 * The reads and writes most repositories make on their records, written once: a counted page of a list, an insert
 * that reports a taken id, a write conditional on the record's `revision`, and the three together for a project's
 * records (`projectRecords`).
 */

export interface CountedPageQuery {
  filter: Record<string, unknown>;
  sort: Record<string, 1 | -1>;
  /** Fields to leave out (or keep), as in `find`. */
  projection?: Record<string, number>;
}

/**
 * One page of a sorted list and the total of the list, read by a find and a count sent together (the count always
 * runs; `listPage` in scope.ts spares it where the rows tell the total).
 */
export async function countedPage<T, R = T>(
  model: Model<T>,
  query: CountedPageQuery,
  page: number,
  limit: number,
): Promise<{ rows: R[]; total: number }> {
  const [rows, total] = await Promise.all([
    model
      .find(query.filter, query.projection)
      .sort(query.sort)
      .skip((page - 1) * limit)
      .limit(limit)
      .lean<R[]>(),
    model.countDocuments(query.filter),
  ]);
  return { rows, total };
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
