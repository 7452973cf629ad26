import type { Principal } from '@platform/contracts';
import { AppError } from '@platform/problems';

/**
 * Tenant of a chat-app request whose path carries no tenant: a tenant credential acts in its own tenant (a
 * different `tenantId` is 403); the platform admin names the tenant, `default` when it does not.
 */
export function tenantFor(principal: Principal, requested: string | undefined): string {
  if (principal.kind === 'admin') return requested ?? 'default';
  if (principal.kind === 'user') {
    if (requested !== undefined && requested !== principal.tenantId)
      throw new AppError('forbidden', 'This credential has no access to that tenant');
    return principal.tenantId;
  }
  throw new AppError('forbidden', 'This credential cannot be used here');
}

/** Workspaces of other tenants do not exist for a tenant credential. */
export function canSee(principal: Principal, tenantId: string): boolean {
  return principal.kind === 'admin' || (principal.kind === 'user' && principal.tenantId === tenantId);
}

/** Members and viewers link, unlink and connect only themselves; tenant admins and owners act for anyone. */
export function assertActsFor(principal: Principal, userId: string): void {
  if (principal.kind === 'admin') return;
  if (
    principal.kind === 'user' &&
    (principal.role === 'admin' || principal.role === 'owner' || principal.userId === userId)
  )
    return;
  throw new AppError('forbidden', 'Only the user themself, or a tenant admin, may do this for that userId');
}
