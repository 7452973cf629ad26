import type { AuditEntry, PendingEvent } from '@platform/contracts';
import { deleteTogether, iso, type Connection, listPage } from '@platform/mongo';
import type { Outbox } from '@platform/outbox';
import { auditEntryModel, auditIntentModel, type AuditEntryDoc } from './entry.model';

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
    // Only a completed entry is shown (an intent's 'pending' never leaves management).
    outcome: d.outcome === 'pending' ? 'unknown' : d.outcome,
    status: d.status ?? null,
    errorCode: d.errorCode ?? null,
    source: d.source,
  };
}

/** The stored form of an entry (a copy of another service's). */
function docOf(e: AuditEntry): AuditEntryDoc {
  return {
    _id: e.id,
    tenantId: e.tenantId,
    projectId: e.projectId,
    at: new Date(e.at),
    completedAt: e.completedAt ? new Date(e.completedAt) : null,
    actor: e.actor,
    actorIds: [e.actor.userId, e.actor.credentialId].filter((v): v is string => Boolean(v)),
    operationId: e.operationId,
    method: e.method,
    service: e.service,
    resourceType: e.resourceType,
    resourceId: e.resourceId,
    before: e.before == null ? null : JSON.stringify(e.before),
    after: e.after == null ? null : JSON.stringify(e.after),
    outcome: e.outcome,
    status: e.status,
    errorCode: e.errorCode,
    source: e.source,
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

/** The `audit.recorded` event of a completed entry (its id is the entry's: a repeat is dropped by JetStream). */
export type AuditEventOf = (entry: AuditEntry) => PendingEvent;

/** How long after the first of them the intents of completed entries are deleted together (ms). */
const INTENT_DELETE_MS = 100;

/**
 * Entries and intents are written through the service's outbox, group-committed: the changes of one moment share one
 * insertMany of their intents and one of their entries (with one batch marker; the `audit.recorded` events are rebuilt
 * from the entries after a crash, not stored twice), and their intents go in one deleteMany; an entry costs no update
 * (an update costs FerretDB several times an insert, docs/performance.md).
 */
export function auditLogRepo(db: Connection, outbox: Outbox, eventOf: AuditEventOf) {
  const Model = auditEntryModel(db);
  const Intents = auditIntentModel(db);
  const eventsOf = (d: AuditEntryDoc) => [eventOf(toAuditEntry(d))];
  const entries = outbox.of(Model, { eventsOf });
  const intents = outbox.of(Intents);
  const hidden = { ...entries.hidden, actorIds: 0 } as const;
  // A delete that fails leaves intents whose entry is stored: the sweep finds the entry there and deletes them.
  const settled = deleteTogether(() => Intents.collection, {
    delayMs: INTENT_DELETE_MS,
    filterOf: (ids) => ({ _id: { $in: ids } }),
    onError: () => undefined,
  });
  return {
    /** The intent of a change about to run (`outcome: 'pending'`), stored before anything of the change is written. */
    async begin(doc: AuditEntryDoc): Promise<void> {
      if ((await intents.insert(doc)) !== 'inserted') throw new Error(`audit intent ${doc._id} was already there`);
    },
    /**
     * Stores the completed entry of an intent, with its `audit.recorded` event, and lets the intent go; false when the
     * entry was stored already (the sweep completed it as `unknown` meanwhile).
     */
    async complete(intent: AuditEntryDoc, set: AuditCompletion & { resourceId?: string }): Promise<boolean> {
      const doc = { ...intent, ...set } as AuditEntryDoc;
      const outcome = await entries.insert(doc, eventsOf(doc));
      settled.add(intent._id);
      return outcome === 'inserted';
    },
    /** Intents that began before `before` (their process stopped before it knew the outcome, or its delete failed). */
    async stalePending(before: Date, limit = 100): Promise<AuditEntryDoc[]> {
      return Intents.find({ at: { $lt: before } })
        .limit(limit)
        .lean();
    },
    /**
     * Stores a copy of another service's entry, as its `audit.recorded` event carries it (management's log of every
     * service). Its event is published already, by that service: no outbox. A repeat (a redelivered event) is a no-op.
     */
    async copy(entry: AuditEntry): Promise<'inserted' | 'duplicate'> {
      return entries.insert(docOf(entry));
    },
    /** Waits until the settled intents are deleted (at shutdown; the outbox publishes the entries' events). */
    flush: () => settled.flush(),
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
      const { rows, total } = await listPage(
        Model,
        { filter: q, sort: { at: -1, _id: 1 }, projection: hidden },
        page,
        limit,
      );
      return { items: rows.map(toAuditEntry), total };
    },
  };
}
