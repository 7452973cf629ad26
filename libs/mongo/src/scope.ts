export function scoped(scope: { tenantId: string; projectId?: string }) {
  return scope.projectId === undefined
    ? { tenantId: scope.tenantId }
    : { tenantId: scope.tenantId, projectId: scope.projectId };
}

/** Natural `_id` for a record unique within a project: fast primary-key lookups. */
export function scopedId(scope: { tenantId: string; projectId: string }, id: string): string {
  return `${scope.tenantId}:${scope.projectId}:${id}`;
}
