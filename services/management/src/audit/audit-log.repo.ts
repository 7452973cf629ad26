import type { AuditEntry, PendingEvent } from '@platform/contracts';
import { iso, type Connection } from '@platform/mongo';
import { outboxOnUpdate, pendingEntries, traced, type OutboxRelay } from '@platform/outbox';
import { auditEntryModel, type AuditEntryDoc } from './audit-entry.model';

const hidden = { pendingEvents: 0, outboxPending: 0, outboxSeq: 0, outboxDelete: 0, actorIds: 0 };

const parsed = (json: string | null | undefined): unknown => (json == null ? null : JSON.parse(json));

export function toAuditEntry(d: AuditEntryDoc): AuditEntry {
  return {
    id: d._id,
    tenantId: d.tenantId ?? null,
    projectId: d.projectId ?? null,
    at: iso(d.at)!,
    completedAt: iso(d.completedAt) ?? null,
    actor: d.actor,
    operationId: d.operationId,
    method: d.method,
    service: d.service,
    resourceType: d.resourceType,
    resourceId: d.resourceId ?? null,
    before: parsed(d.before),
    after: parsed(d.after),
    outcome: d.outcome,
    status: d.status ?? null,
    errorCode: d.errorCode ?? null,
    source: d.source,
  };
}

export interface AuditLogFilter {
  from?: string;
  to?: string;
  actorId?: string;
  resourceId?: string;
  resourceType?: string;
  operationId?: string;
  outcome?: string;
}

/** What completing an entry sets. */
export interface AuditCompletion {
  outcome: 'succeeded' | 'failed' | 'unknown';
  status: number | null;
  errorCode: string | null;
  after: string | null;
  completedAt: Date;
}

export type AuditLogRepo = ReturnType<typeof auditLogRepo>;

export function auditLogRepo(db: Connection, relay: OutboxRelay) {
  const Model = auditEntryModel(db);
  return {
    /** The entry of a change about to run (`outcome: 'pending'`), before anything of the change is written. */
    async begin(doc: AuditEntryDoc): Promise<void> {
      await Model.create(doc);
    },
    /**
     * Completes a pending entry once, with its `audit.recorded` event in the same write (`event` gets the completed
     * entry); false when it was not pending any more (completed by the sweep meanwhile).
     */
    async complete(id: string, set: AuditCompletion, event: (entry: AuditEntry) => PendingEvent): Promise<boolean> {
      const current = await Model.findOne({ _id: id, outcome: 'pending' }, { pendingEvents: 0 }).lean();
      if (!current) return false;
      const events = traced([event(toAuditEntry({ ...current, ...set } as AuditEntryDoc))]);
      const ops = outboxOnUpdate(events);
      // Only a pending entry is completed, once (findOneAndUpdate with a projection is not served by FerretDB).
      const written = await relay.exclusive([id], () => Model.updateOne({ _id: id, outcome: 'pending' }, { $set: { ...set, ...ops.$set }, $inc: ops.$inc }));
      if (written.modifiedCount !== 1) return false;
      relay.flush({ _id: id, outboxSeq: (current.outboxSeq ?? 0) + 1, pendingEvents: pendingEntries(events) });
      return true;
    },
    /** Entries still pending that began before `before` (their process stopped before it knew the outcome). */
    async stalePending(before: Date, limit = 100): Promise<AuditEntryDoc[]> {
      return Model.find({ outcome: 'pending', at: { $lt: before } }, hidden).limit(limit).lean();
    },
    async list(tenantId: string, filter: AuditLogFilter, page: number, limit: number) {
      const at: Record<string, Date> = {};
      if (filter.from) at.$gte = new Date(filter.from);
      if (filter.to) at.$lt = new Date(filter.to);
      const q = {
        tenantId,
        ...(filter.actorId ? { actorIds: filter.actorId } : {}),
        ...(filter.resourceId ? { resourceId: filter.resourceId } : {}),
        ...(filter.resourceType ? { resourceType: filter.resourceType } : {}),
        ...(filter.operationId ? { operationId: filter.operationId } : {}),
        ...(filter.outcome ? { outcome: filter.outcome } : {}),
        ...(Object.keys(at).length ? { at } : {}),
      };
      const [rows, total] = await Promise.all([
        Model.find(q, hidden).sort({ at: -1, _id: 1 }).skip((page - 1) * limit).limit(limit).lean(),
        Model.countDocuments(q),
      ]);
      return { items: rows.map(toAuditEntry), total };
    },
  };
}
