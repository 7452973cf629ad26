import type { Model } from 'mongoose';

export function scoped(scope: { tenantId: string; projectId?: string }) {
  return scope.projectId === undefined ? { tenantId: scope.tenantId } : { tenantId: scope.tenantId, projectId: scope.projectId };
}

/** Natural `_id` for a record unique within a project: fast primary-key lookups. */
export function scopedId(scope: { tenantId: string; projectId: string }, id: string): string {
  return `${scope.tenantId}:${scope.projectId}:${id}`;
}

/**
 * One page of a sorted list and the list's total. The total is counted only when the page is full: a short page
 * (every page of a small list, and the last page of any) already tells it exactly, so most list calls are one query.
 */
export async function listPage<T>(
  model: Model<any>,
  filter: Record<string, unknown>,
  projection: Record<string, number> | undefined,
  sort: Record<string, 1 | -1>,
  page: number,
  limit: number,
): Promise<{ rows: T[]; total: number }> {
  const rows = (await model.find(filter, projection).sort(sort).skip((page - 1) * limit).limit(limit).lean()) as T[];
  if (rows.length > 0 && rows.length < limit) return { rows, total: (page - 1) * limit + rows.length };
  if (rows.length === 0 && page === 1) return { rows, total: 0 };
  return { rows, total: await model.countDocuments(filter) };
}
