/**
 * The audit log of every service that serves management changes (under /manage and /work-apps/chatapp, and the
 * credential gateway's key rotation; docs/security.md, "Audit log"): each change is recorded once, by the service that
 * made it, in its own database and through its own outbox (an intent before the change, the entry with the outcome
 * after it, and an `audit.recorded` event). Management keeps the tenants' log: its own entries and copies of the
 * others', from their events.
 */
import { parseOperationInput, type HandlerContext, type ServiceBus } from '@platform/bus';
import type { AnyOperation } from '@platform/contracts';
import { getLogger } from '@platform/logger';
import type { Connection } from '@platform/mongo';
import type { Outbox } from '@platform/outbox';
import {
  auditEventOf,
  closeAuditEntry,
  isAuditedChange,
  openAuditEntry,
  readerOf,
  settleStaleAuditEntries,
  stateOf,
  type AuditDeps,
} from './audit';
import { auditLogRepo } from './repo';

export {
  actorOf,
  auditEventOf,
  isAuditedChange,
  readerOf,
  redact,
  resourceOf,
  settleStaleAuditEntries,
  type AuditDeps,
} from './audit';
export { auditLogRepo, toAuditEntry, type AuditLogFilter, type AuditLogRepo } from './repo';

const log = getLogger('audit');

/** The state of a resource read through its own `get` operation in this process (null when there is none or it fails). */
async function readState(
  bus: ServiceBus,
  reader: AnyOperation | undefined,
  params: unknown,
  ctx: HandlerContext,
): Promise<unknown> {
  if (!reader) return null;
  try {
    const out = await bus.invokeLocal(reader, parseOperationInput(reader, { params }), ctx);
    return out ? stateOf(out.body) : null;
  } catch {
    return null;
  }
}

/**
 * The audit log in one place on a service's operation path: every change this bus serves (every operation that is not
 * a read, including the ones registered later) is recorded once. Its intent is written before the change runs, so no
 * change happens without it, and the entry with the outcome afterwards (with its `audit.recorded` event through the
 * outbox); `before` is the resource as its own read operation answers it (none for a create), `after` the change's reply.
 */
export function auditChanges(bus: ServiceBus, deps: AuditDeps): void {
  bus.intercept(async (op, input, ctx, next) => {
    if (!isAuditedChange(op)) return next();
    const params = (input.params ?? {}) as Record<string, unknown>;
    const before = await readState(bus, readerOf(op), params, ctx);
    const intent = await openAuditEntry(deps, op, { params, query: input.query, body: input.body }, ctx, before);
    try {
      const out = await next();
      await closeAuditEntry(deps, intent, { ok: true, status: out.status, body: out.body, op, params });
      return out;
    } catch (error) {
      await closeAuditEntry(deps, intent, { ok: false, error });
      throw error;
    }
  });
}

export interface AuditLogOptions {
  bus: ServiceBus;
  db: Connection;
  /** The service's outbox (it publishes the entries' events, and sweeps what a stopped process left). */
  outbox: Outbox;
  /** AUDIT_PENDING_SETTLE_SECONDS. */
  settleSeconds: number;
}

/**
 * A service's audit log, started: its repository, its stale intents settled (now and every minute), and every change
 * the bus serves recorded (call it before the handlers are registered, or after: the interceptor wraps them all).
 * `stop` deletes the settled intents still waiting; the outbox publishes the entries' events.
 */
export async function startAuditLog(opts: AuditLogOptions): Promise<{ deps: AuditDeps; stop(): Promise<void> }> {
  const deps: AuditDeps = { auditLog: auditLogRepo(opts.db, opts.outbox, auditEventOf) };
  // Entries of changes whose process stopped before it knew their outcome.
  const settle = () =>
    settleStaleAuditEntries(deps, opts.settleSeconds * 1000).catch(
      (err: unknown) => (log.warn({ err }, 'settling audit entries failed'), 0),
    );
  await settle();
  const timer = setInterval(() => void settle(), 60_000);
  timer.unref();
  auditChanges(opts.bus, deps);
  return {
    deps,
    async stop() {
      clearInterval(timer);
      await deps.auditLog.flush();
    },
  };
}
