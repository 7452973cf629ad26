import { mongoose, scopedSchema, type Connection, type Model, type StoredDoc } from '@platform/mongo';
import { outboxFields, type PendingEventsField } from '@platform/outbox';
import type { AppKeyAlgorithm, AppType } from '@platform/contracts';

/**
 * `_id` is the app id (`app_<random>`, unique platform-wide), so the run-auth lookup is a primary-key read.
 * Public keys live in the app document as a map keyed by base64url(kid). Every change is a write conditional on
 * `revision`, its events written in the same document (the outbox, whose writes of one document in a process never
 * overlap). Its `lastUsedAt` lives in a document of its own (`appUsage`): run-auth reports it on every use, and FerretDB
 * applies concurrent updates of one document as read-modify-write of the whole document and loses one of them
 * (measured: 40 concurrent `$set`/`$unset` on one document kept 10).
 */
const schema = scopedSchema(
  {
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
    ...outboxFields,
  },
  { collection: 'apps', id: false, timestamps: false, minimize: false },
);
schema.index({ tenantId: 1, projectId: 1, createdAt: -1, _id: 1 });
schema.index({ tenantId: 1, type: 1, createdAt: -1, _id: 1 });

// config, publicKeys and pendingEvents are Mixed paths (InferSchemaType types them as `any`); type is a plain String the code only ever writes an AppType to.
export type AppDoc = StoredDoc<
  typeof schema,
  string,
  PendingEventsField & { type: AppType; config: StoredAppConfig; publicKeys: Record<string, StoredAppKey> }
>;

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

/** When each app last authenticated a request (written by run-auth reports, away from the app document). */
const usageSchema = new mongoose.Schema(
  { _id: { type: String }, lastUsedAt: { type: Date, required: true } },
  { collection: 'appUsage', versionKey: false },
);

export type AppUsageDoc = StoredDoc<typeof usageSchema>;

export function appUsageModel(db: Connection): Model<AppUsageDoc> {
  return db.models.AppUsage ?? db.model<AppUsageDoc>('AppUsage', usageSchema);
}
