import type { AuditEntry, AuditLogQuery } from '@platform/contracts';
import type { AuditDeps } from '@platform/audit';
import { getLogger } from '@platform/logger';

export type { AuditDeps } from '@platform/audit';

const log = getLogger('management.audit-log');

export async function listAuditEntries(deps: AuditDeps, tenantId: string, query: AuditLogQuery) {
  const { page, limit, ...filter } = query;
  return deps.auditLog.list(tenantId, filter, page, limit);
}

/**
 * An entry another service recorded (its `audit.recorded` event) joins the tenants' log here. Management's own entries
 * are stored already; a redelivered event changes nothing (the entry id is its key).
 */
export async function keepEntryOfAnotherService(deps: AuditDeps, entry: AuditEntry): Promise<void> {
  if (entry.service === 'management') return;
  if ((await deps.auditLog.copy(entry)) === 'duplicate') log.debug({ auditId: entry.id }, 'audit entry copied already');
}
