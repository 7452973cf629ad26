import {
  AUDIT_NO_PROJECT,
  AUDIT_NO_TENANT,
  allOperations,
  auditRecorded,
  pendingEvent,
  type AnyOperation,
  type AuditActor,
  type AuditEntry,
  type AuthScheme,
  type Principal,
  type RequestMeta,
} from '@platform/contracts';
import { AppError } from '@platform/problems';
import { randomId } from '@platform/secrets';
import { getLogger, redactSecrets } from '@platform/logger';
import type { AuditEntryDoc } from './entry.model';
import type { AuditCompletion, AuditLogRepo } from './repo';

const log = getLogger('audit');

export interface AuditDeps {
  auditLog: AuditLogRepo;
}

/** Who asked, as the request carried it. */
export interface AuditRequest {
  principal: Principal;
  meta: RequestMeta;
  requestId: string;
}

/**
 * The credentials that manage a tenant or the platform: management access tokens and sessions (`manage`, and `bearer`
 * and `cookie` for starting and ending a session) and the platform admin's (`admin`).
 */
const MANAGEMENT_AUTH: ReadonlySet<AuthScheme> = new Set(['manage', 'bearer', 'cookie', 'admin']);

/**
 * A management change, audited: an operation that is not a read, served with a management credential. Not the
 * product's traffic sent with other credentials or none (run events, analytics events, trigger invocations, token
 * exchanges, anonymous sessions): it is driven by end users and third parties, not by the tenant's management.
 */
export const isAuditedChange = (op: AnyOperation) => op.method !== 'get' && MANAGEMENT_AUTH.has(op.auth);

const paramNames = (path: string) => [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
const SCOPE_PARAMS = new Set(['tenantId', 'projectId']);

/**
 * The read of the resource a change acts on: the `get` operation of the same service whose path is the change's path
 * or a prefix of it and ends in a parameter (PATCH/DELETE `…/api-keys/{id}` and POST `…/{id}/rotate-secret` are read
 * by GET `…/api-keys/{id}`). None for a create on a collection.
 */
export function readerOf(op: AnyOperation, operations: AnyOperation[] = allOperations): AnyOperation | undefined {
  // A create has no state before it (the read of the path's parent, a project say, is not the resource's).
  if (isCreate(op, operations)) return undefined;
  let best: AnyOperation | undefined;
  for (const r of operations) {
    if (r.method !== 'get' || r.service !== op.service || !/\}$/.test(r.path)) continue;
    if (r.path !== op.path && !op.path.startsWith(`${r.path}/`)) continue;
    if (!best || r.path.length > best.path.length) best = r;
  }
  return best;
}

/** The id of a created resource in a reply body: `data.id`, or the `id` of the first object inside `data`. */
function createdId(body: unknown): string | null {
  const data = (body as { data?: unknown } | undefined)?.data;
  if (!data || typeof data !== 'object') return null;
  const own = (data as { id?: unknown }).id;
  if (typeof own === 'string') return own;
  for (const v of Object.values(data)) {
    const id = v && typeof v === 'object' ? (v as { id?: unknown }).id : undefined;
    if (typeof id === 'string') return id;
  }
  return null;
}

/** A create on a collection: a POST on the path a list reads, or on the path whose `/{id}` names one of its resources. */
function isCreate(op: AnyOperation, operations: AnyOperation[]): boolean {
  if (op.method !== 'post') return false;
  const member = new RegExp(`^${op.path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/\\{\\w+\\}$`);
  return operations.some(
    (r) => r.service === op.service && ((r.method === 'get' && r.path === op.path) || member.test(r.path)),
  );
}

/**
 * The kind of resource (the path segment naming it) and its id: for a create the collection and the created id (from
 * the reply, once there is one), otherwise the last path parameter that is not the tenant or project.
 */
export function resourceOf(
  op: AnyOperation,
  params: Record<string, unknown>,
  replyBody?: unknown,
  operations: AnyOperation[] = allOperations,
): { type: string; id: string | null } {
  const segments = op.path.split('/').filter(Boolean);
  const literal = (upTo: number) =>
    [...segments.slice(0, upTo)].reverse().find((s) => !s.startsWith('{')) ?? op.operationId;
  const last = [...paramNames(op.path)].reverse().find((n) => !SCOPE_PARAMS.has(n));
  if (!last || isCreate(op, operations)) return { type: literal(segments.length), id: createdId(replyBody) };
  return { type: literal(segments.indexOf(`{${last}}`)), id: String(params[last]) };
}

/** Field names whose values are secrets: never stored in an entry. */
const SECRET_NAME =
  /^(key|value|token|secret|password|session|cookie|authorization|apiKey|code)$|secret|password|token$|privatekey|signingkey|credentials?value/i;
/** A before/after larger than this (JSON characters) is stored as a note of its size. */
const MAX_STATE_CHARS = 32_000;
const REDACTED = '[redacted]';

/**
 * A copy with the value of every secret-named field replaced, and in every other text the secret shapes the logs hide
 * (our keys, JWTs such as the chat app's link tokens inside the URLs it answers); objects and arrays are walked.
 */
export function redact(value: unknown): unknown {
  if (typeof value === 'string') return redactSecrets(value);
  if (Array.isArray(value)) return value.map(redact);
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value))
    out[k] = v !== null && typeof v === 'object' ? redact(v) : SECRET_NAME.test(k) && v != null ? REDACTED : redact(v);
  return out;
}

/** The redacted state as stored (JSON text), bounded in size. */
function storedState(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  const json = JSON.stringify(redact(value));
  return json.length > MAX_STATE_CHARS ? JSON.stringify({ truncated: true, chars: json.length }) : json;
}

/** A resource state read from a reply body: its `data` when it has one. */
export const stateOf = (body: unknown): unknown =>
  body && typeof body === 'object' && 'data' in body ? (body as { data: unknown }).data : (body ?? null);

export function actorOf(principal: Principal, meta: RequestMeta): AuditActor {
  return {
    kind: principal.kind,
    userId:
      principal.kind === 'user' ? principal.userId : principal.kind === 'run' ? (principal.subject ?? null) : null,
    role: principal.kind === 'user' ? principal.role : principal.kind === 'admin' ? 'platform-admin' : null,
    credentialId: meta.credentialId ?? null,
    via: principal.kind === 'user' || principal.kind === 'admin' ? principal.via : null,
  };
}

/** The `tenantId` an object names (a path's parameters, a query, a body, a resource's state), if it names one. */
const tenantNamedBy = (value: unknown): string | undefined => {
  const named = value !== null && typeof value === 'object' ? (value as { tenantId?: unknown }).tenantId : undefined;
  return typeof named === 'string' ? named : undefined;
};

/** What a change was asked with: its path parameters, and its query and body where it has them. */
export interface ChangeInput {
  params: Record<string, unknown>;
  query?: unknown;
  body?: unknown;
}

/**
 * The tenant whose log an entry belongs to: the one the path names; else the caller's own (a tenant credential acts in
 * its own tenant only, so a request of it naming another tenant is refused and recorded in the caller's log); else,
 * for the platform admin, the tenant the request names (`tenantId` of its query or body) or the one the resource
 * belongs to (`tenantId` of its state before the change); else none (null: the admin's own sessions, the credential
 * gateway's key rotation).
 */
function tenantOf(input: ChangeInput, principal: Principal, before: unknown): string | null {
  const own = 'tenantId' in principal ? principal.tenantId : undefined;
  return (
    tenantNamedBy(input.params) ??
    own ??
    tenantNamedBy(input.query) ??
    tenantNamedBy(input.body) ??
    tenantNamedBy(before) ??
    null
  );
}

/** Writes the intent of a change about to run; the change must not run when this fails. Returns the intent. */
export async function openAuditEntry(
  deps: AuditDeps,
  op: AnyOperation,
  input: ChangeInput,
  req: AuditRequest,
  before: unknown,
): Promise<AuditEntryDoc> {
  const { params } = input;
  const id = `aud_${randomId(24)}`;
  const actor = actorOf(req.principal, req.meta);
  const resource = resourceOf(op, params);
  const doc: AuditEntryDoc = {
    _id: id,
    tenantId: tenantOf(input, req.principal, before),
    projectId: typeof params.projectId === 'string' ? params.projectId : null,
    at: new Date(),
    completedAt: null,
    actor,
    actorIds: [actor.userId, actor.credentialId].filter((v): v is string => Boolean(v)),
    operationId: op.operationId,
    method: op.method,
    service: op.service,
    resourceType: resource.type,
    resourceId: resource.id,
    before: storedState(before),
    after: null,
    outcome: 'pending',
    status: null,
    errorCode: null,
    source: { ip: req.meta.ip ?? null, userAgent: req.meta.userAgent ?? null, requestId: req.requestId },
  };
  await deps.auditLog.begin(doc);
  return doc;
}

/** The `audit.recorded` event of a completed entry; its id is the entry's, so a repeat of it is dropped by JetStream. */
export const auditEventOf = (entry: AuditEntry) =>
  pendingEvent(
    auditRecorded,
    entry.id,
    { tenantId: entry.tenantId ?? AUDIT_NO_TENANT, projectId: entry.projectId ?? AUDIT_NO_PROJECT },
    { entry },
    entry.completedAt ?? undefined,
  );

/** What a change came to: its reply (status and body), or the error it threw. */
export type ChangeResult =
  | { ok: true; status: number; body: unknown; op: AnyOperation; params: Record<string, unknown> }
  | { ok: false; error: unknown };

/**
 * Completes the entry with the outcome and the redacted state after the change (and the created resource's id). A
 * failure to write it is logged, not answered: the change is done, and the sweep completes the entry as `unknown`.
 */
export async function closeAuditEntry(deps: AuditDeps, intent: AuditEntryDoc, result: ChangeResult): Promise<void> {
  const set: AuditCompletion & { resourceId?: string } = result.ok
    ? {
        outcome: 'succeeded',
        status: result.status,
        errorCode: null,
        after: storedState(result.op.method === 'delete' ? null : stateOf(result.body)),
        completedAt: new Date(),
      }
    : {
        outcome: 'failed',
        status: result.error instanceof AppError ? result.error.status : 500,
        errorCode: result.error instanceof AppError ? result.error.code : 'internal_server_error',
        after: null,
        completedAt: new Date(),
      };
  if (result.ok) {
    const created = resourceOf(result.op, result.params, result.body).id;
    if (created) set.resourceId = created;
  }
  try {
    await deps.auditLog.complete(intent, set);
  } catch (err) {
    log.warn({ err, auditId: intent._id }, 'completing an audit entry failed; the sweep will complete it as unknown');
  }
}

/**
 * Completes, as `unknown`, the intents left longer than `olderThanMs` (the process that ran them stopped before it knew
 * the outcome); an intent whose entry is stored already only goes. Answers how many entries it completed.
 */
export async function settleStaleAuditEntries(deps: AuditDeps, olderThanMs: number): Promise<number> {
  const stale = await deps.auditLog.stalePending(new Date(Date.now() - olderThanMs));
  const done = await Promise.all(
    stale.map((d) =>
      deps.auditLog.complete(d, {
        outcome: 'unknown',
        status: null,
        errorCode: null,
        after: null,
        completedAt: new Date(),
      }),
    ),
  );
  return done.filter(Boolean).length;
}
