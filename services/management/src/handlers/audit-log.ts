import { listAuditLog, pagination } from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';
import { listAuditEntries, type AuditDeps } from '../domain/audit-log';

/**
 * The tenants' audit log: management's own changes (recorded by the interceptor of libs/audit, started in service.ts)
 * and those of the other services that serve management changes, copied from their `audit.recorded` events.
 */
export function registerAuditLogHandlers(bus: ServiceBus, deps: AuditDeps): void {
  bus.handle(listAuditLog, async ({ params, query }) => {
    const { items, total } = await listAuditEntries(deps, params.tenantId, query);
    return { data: items, pagination: pagination(query.page, query.limit, total, items.length) };
  });
}
