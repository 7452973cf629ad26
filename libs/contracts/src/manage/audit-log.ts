import { z } from 'zod';
import { listOperation } from '../record-operations';
import { event } from '../event';
import { IsoDateTime, ListQuery, TenantPath } from '../common';

/**
 * The audit log: one entry per management change (create, update, delete, rotate, revoke, session start and end,
 * merge, redeliver, test, evaluate, chat workspace settings), written by the service that made the change (management,
 * evals, the webhook dispatcher, analytics, the chat app, the credential gateway) before the change runs and completed
 * with its outcome after it; management keeps every service's entries for the tenant's log (see docs/security.md,
 * "Audit log"). Entries are never updated by anyone else
 * and never deleted through the API.
 */
export const AuditActor = z.object({
  kind: z.enum(['admin', 'user', 'anonymous', 'run', 'analytics']).describe('Kind of principal that made the request'),
  userId: z.string().nullable().describe('The tenant user (null for the platform admin)'),
  role: z.string().nullable(),
  credentialId: z
    .string()
    .nullable()
    .describe('Id of the credential used (access token id, session id); never the secret'),
  via: z.string().nullable().describe('bearer or cookie'),
});
export type AuditActor = z.infer<typeof AuditActor>;

export const AuditOutcome = z.enum(['succeeded', 'failed', 'unknown']);
export type AuditOutcome = z.infer<typeof AuditOutcome>;

export const AuditEntry = z.object({
  id: z.string(),
  tenantId: z.string().nullable(),
  projectId: z.string().nullable(),
  at: z.string().describe('When the change was asked for (ISO 8601)'),
  completedAt: z.string().nullable(),
  actor: AuditActor,
  operationId: z.string().describe('The operation that made the change, e.g. deleteApiKey'),
  method: z.string(),
  service: z.string().describe('The service that owns the operation'),
  resourceType: z.string().describe('The collection segment of the path, e.g. api-keys'),
  resourceId: z.string().nullable(),
  before: z.unknown().describe('The resource before the change, secrets redacted (null for a create)'),
  after: z.unknown().describe('The resource after the change, secrets redacted (null for a delete or a failure)'),
  outcome: AuditOutcome.describe(
    'An entry is listed once its change is done; unknown when the process stopped before it knew the outcome (settled after AUDIT_PENDING_SETTLE_SECONDS)',
  ),
  status: z.number().int().nullable().describe('The HTTP status the change answered'),
  errorCode: z.string().nullable(),
  source: z.object({
    ip: z.string().nullable(),
    userAgent: z.string().nullable(),
    requestId: z.string().nullable(),
  }),
});
export type AuditEntry = z.infer<typeof AuditEntry>;

export const AuditLogQuery = ListQuery.extend({
  from: IsoDateTime.optional().describe('Entries at or after this time'),
  to: IsoDateTime.optional().describe('Entries before this time'),
  actorId: z.string().min(1).max(256).optional().describe('userId or credentialId of the actor'),
  resourceId: z.string().min(1).max(256).optional(),
  resourceType: z.string().min(1).max(128).optional(),
  operationId: z.string().min(1).max(128).optional(),
  outcome: AuditOutcome.optional(),
});
export type AuditLogQuery = z.infer<typeof AuditLogQuery>;

export const listAuditLog = listOperation({
  operationId: 'listAuditLog',
  summary: "List a tenant's audit log (newest first)",
  description:
    "Every management change of the tenant (management's own, those served by evals, the webhook dispatcher and analytics under /manage, and the chat app's under /work-apps/chatapp), with who, what, when, from where and the outcome. Owners and admins only.",
  tags: ['Audit log'],
  path: '/manage/tenants/{tenantId}/audit-log',
  service: 'management',
  subject: 'svc.management.audit-log.list',
  auth: 'manage',
  permission: 'edit',
  params: TenantPath,
  query: AuditLogQuery,
  item: AuditEntry,
  errors: [400, 401, 403, 422, 500],
});

/** Project token of the `audit.recorded` subject for an entry of no project (tenant-level changes). */
export const AUDIT_NO_PROJECT = '_tenant';
/** Tenant token of the `audit.recorded` subject for an entry of no tenant (the platform admin's own sessions, key rotations). */
export const AUDIT_NO_TENANT = '_platform';

export const auditRecorded = event({
  name: 'audit.recorded',
  version: 1,
  publisher: 'management',
  // Each service that serves management changes records its own and publishes their entries; management copies them.
  alsoPublishedBy: ['evals', 'webhook-dispatcher', 'analytics', 'chatapp', 'credential-gateway'],
  description: `An audit entry was completed (its outcome is known). For SIEM consumers: one message per entry, de-duplicate by \`id\`. Tenant-level entries use the project token \`${AUDIT_NO_PROJECT}\`; entries of no tenant (the platform admin's own sessions, the credential gateway's key rotations) the tenant token \`${AUDIT_NO_TENANT}\`.`,
  payload: z.object({ entry: AuditEntry }),
});
