import { listAuditLog, pagination, type AnyOperation } from '@platform/contracts';
import { parseOperationInput, type HandlerContext, type ServiceBus } from '@platform/bus';
import { closeAuditEntry, isAuditedChange, listAuditEntries, openAuditEntry, readerOf, stateOf, type AuditDeps } from './audit-log';

/** The state of a resource read through its own `get` operation in this process (null when there is none or it fails). */
async function readState(bus: ServiceBus, reader: AnyOperation | undefined, params: unknown, ctx: HandlerContext): Promise<unknown> {
  if (!reader) return null;
  try {
    const out = await bus.invokeLocal(reader, parseOperationInput(reader, { params }), ctx);
    return out ? stateOf(out.body) : null;
  } catch {
    return null;
  }
}

/**
 * The audit log, in one place on management's operation path: every change this bus serves (every operation that is
 * not a read, including the ones registered later) is recorded once. Its intent is written before the change runs, so
 * no change happens without it, and the entry with the outcome afterwards (with its `audit.recorded` event through the
 * outbox); `before` is the resource as its own read operation answers it (none for a create), `after` the change's reply.
 */
export function registerAuditLog(bus: ServiceBus, deps: AuditDeps): void {
  bus.handle(listAuditLog, async ({ params, query }) => {
    const { items, total } = await listAuditEntries(deps, params.tenantId, query);
    return { data: items, pagination: pagination(query.page, query.limit, total, items.length) };
  });
  bus.intercept(async (op, input, ctx, next) => {
    if (!isAuditedChange(op)) return next();
    const params = (input.params ?? {}) as Record<string, unknown>;
    const before = await readState(bus, readerOf(op), params, ctx);
    const intent = await openAuditEntry(deps, op, params, ctx, before);
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
