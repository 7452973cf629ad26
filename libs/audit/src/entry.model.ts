import type { AuditActor } from '@platform/contracts';
import { keepThroughErasure, mongoose, type Connection, type Model, type StoredDoc } from '@platform/mongo';
import { outboxFields, type PendingEventsField } from '@platform/outbox';

/**
 * One audit entry (collection `auditLog` of the service that made the change, in its own database), written once when
 * the change's outcome is known, with its `audit.recorded` event (group-committed with an outbox marker, libs/outbox).
 * Nothing updates it and nothing deletes it. Before the change runs, the same fields are written to `auditIntents`
 * (`outcome: 'pending'`): the proof that the change was asked for, removed once its entry is stored, and turned into an
 * entry of outcome `unknown` by the sweep when its process stopped before it knew the outcome. Management's `auditLog`
 * also holds the entries of the other services, copied from their `audit.recorded` events: the tenant's log is read
 * there (docs/security.md, "Audit log").
 */
const fields = {
  _id: { type: String },
  tenantId: { type: String, default: null },
  projectId: { type: String, default: null },
  at: { type: Date, required: true },
  completedAt: { type: Date, default: null },
  actor: { type: mongoose.Schema.Types.Mixed, required: true },
  actorIds: { type: [String], default: [] },
  operationId: { type: String, required: true },
  method: { type: String, required: true },
  service: { type: String, required: true },
  resourceType: { type: String, required: true },
  resourceId: { type: String, default: null },
  /** JSON text of the redacted state (a map's keys may not be storable field names). */
  before: { type: String, default: null },
  after: { type: String, default: null },
  outcome: { type: String, required: true },
  status: { type: Number, default: null },
  errorCode: { type: String, default: null },
  source: { type: mongoose.Schema.Types.Mixed, required: true },
};
const schema = new mongoose.Schema(
  { ...fields, ...outboxFields },
  { collection: 'auditLog', versionKey: false, minimize: false },
);
schema.index({ tenantId: 1, at: -1, _id: 1 });
const intentSchema = new mongoose.Schema(fields, { collection: 'auditIntents', versionKey: false, minimize: false });
intentSchema.index({ at: 1 });
// A project erasure leaves the audit log alone: it is append-only and holds the record of the erasure itself.
keepThroughErasure(schema);
keepThroughErasure(intentSchema);

export type AuditEntryDoc = StoredDoc<
  typeof schema,
  string,
  PendingEventsField & {
    actor: AuditActor;
    source: { ip: string | null; userAgent: string | null; requestId: string | null };
    outcome: 'pending' | 'succeeded' | 'failed' | 'unknown';
  }
>;

export function auditEntryModel(db: Connection): Model<AuditEntryDoc> {
  return db.models.AuditEntry ?? db.model<AuditEntryDoc>('AuditEntry', schema);
}

export function auditIntentModel(db: Connection): Model<AuditEntryDoc> {
  return db.models.AuditIntent ?? db.model<AuditEntryDoc>('AuditIntent', intentSchema);
}
