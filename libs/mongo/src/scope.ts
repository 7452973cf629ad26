import type { Model } from 'mongoose';

export function scoped(scope: { tenantId: string; projectId?: string }) {
  return scope.projectId === undefined
    ? { tenantId: scope.tenantId }
    : { tenantId: scope.tenantId, projectId: scope.projectId };
}

/** Natural `_id` for a record unique within a project: fast primary-key lookups. */
export function scopedId(scope: { tenantId: string; projectId: string }, id: string): string {
  return `${scope.tenantId}:${scope.projectId}:${id}`;
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
  model: Model<T>,
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
