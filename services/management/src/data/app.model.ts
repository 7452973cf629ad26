import { mongoose, type Connection, type Model, type StoredDoc } from '@platform/mongo';
import { outboxFields, type PendingEventsField } from '@platform/outbox';
import type { AppKeyAlgorithm, AppType } from '@platform/contracts';

/**
 * `_id` is the app id (`app_<random>`, unique platform-wide), so the run-auth lookup is a primary-key read.
 * Public keys live in the app document as a map keyed by base64url(kid). Every change is a write conditional on
 * `revision`. Only user changes write this document: its events and its `lastUsedAt` live in documents of their own
 * (`appEvents`, `appUsage`), because FerretDB applies concurrent updates of one document as read-modify-write of the
 * whole document and loses one of them (measured: 40 concurrent `$set`/`$unset` on one document kept 10).
 */
const schema = new mongoose.Schema(
  {
    _id: { type: String },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    name: { type: String, required: true },
    description: { type: String, default: null },
    prompt: { type: String, default: null },
    type: { type: String, required: true },
    enabled: { type: Boolean, required: true },
    defaultAgentId: { type: String, default: null },
    defaultProjectId: { type: String, default: null },
    config: { type: mongoose.Schema.Types.Mixed, required: true },
    publicKeys: { type: mongoose.Schema.Types.Mixed, default: {} },
    revision: { type: Number, required: true },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'apps', versionKey: false, minimize: false },
);
schema.index({ tenantId: 1, projectId: 1, createdAt: -1, _id: 1 });
schema.index({ tenantId: 1, type: 1, createdAt: -1, _id: 1 });

// config and publicKeys are Mixed paths (InferSchemaType types them as `any`); type is a plain String the code only ever writes an AppType to.
export type AppDoc = StoredDoc<typeof schema, string, { type: AppType; config: StoredAppConfig; publicKeys: Record<string, StoredAppKey> }>;

export function appModel(db: Connection): Model<AppDoc> {
  return db.models.App ?? db.model<AppDoc>('App', schema);
}

export interface StoredAppKey {
  kid: string;
  algorithm: AppKeyAlgorithm;
  publicKey: string;
  addedAt: Date;
}

export interface StoredAppConfig {
  type: AppType;
  webClient?: { allowAnonymous: boolean; allowedDomains: string[]; audience: string | null };
  supportCopilot?: { audience: string | null };
}

/** Map key of a kid (kids may hold `.` or `$`, which field names cannot). */
export const kidField = (kid: string) => Buffer.from(kid, 'utf8').toString('base64url');

/**
 * The outbox of app changes: one document per event, written *held* before the app change and released after it
 * (then relayed to JetStream and deleted by the outbox relay). A held event whose change never landed (crash, lost
 * race) is resolved by `sweepHeld`: released when the app reached `revision` (or is gone, for `app.deleted`), else dropped.
 */
const eventSchema = new mongoose.Schema(
  {
    _id: { type: String },
    appId: { type: String, required: true },
    /** Revision the change produces; -1 for a deletion. */
    revision: { type: Number, required: true },
    held: { type: Boolean, default: undefined, index: { sparse: true } },
    createdAt: { type: Date, required: true },
    ...outboxFields,
  },
  { collection: 'appEvents', versionKey: false, minimize: false },
);

// pendingEvents is a Mixed path (InferSchemaType types it as `any`).
export type AppEventDoc = StoredDoc<typeof eventSchema, string, PendingEventsField>;

export function appEventModel(db: Connection): Model<AppEventDoc> {
  return db.models.AppEvent ?? db.model<AppEventDoc>('AppEvent', eventSchema);
}

/** When each app last authenticated a request (written by run-auth reports, away from the app document). */
const usageSchema = new mongoose.Schema({ _id: { type: String }, lastUsedAt: { type: Date, required: true } }, { collection: 'appUsage', versionKey: false });

export type AppUsageDoc = StoredDoc<typeof usageSchema>;

export function appUsageModel(db: Connection): Model<AppUsageDoc> {
  return db.models.AppUsage ?? db.model<AppUsageDoc>('AppUsage', usageSchema);
}
