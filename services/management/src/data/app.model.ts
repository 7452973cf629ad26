import { mongoose, outboxFields, type Connection, type Model } from '@platform/mongo';
import type { AppKeyAlgorithm, AppType } from '@platform/contracts';

/**
 * `_id` is the app id (`app_<random>`, unique platform-wide), so the run-auth lookup is a primary-key read.
 * Public keys live in the app document as a map keyed by base64url(kid): adding one is a conditional `$set`,
 * removing one an `$unset` (both atomic with the outbox entry that announces the change).
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
    lastUsedAt: { type: Date, default: null },
    ...outboxFields,
  },
  { collection: 'apps', versionKey: false, minimize: false },
);
schema.index({ tenantId: 1, projectId: 1, createdAt: -1 });
schema.index({ tenantId: 1, type: 1, createdAt: -1 });

export function appModel(db: Connection): Model<any> {
  return db.models.App ?? db.model('App', schema);
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

export interface AppDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  name: string;
  description: string | null;
  prompt: string | null;
  type: AppType;
  enabled: boolean;
  defaultAgentId: string | null;
  defaultProjectId: string | null;
  config: StoredAppConfig;
  publicKeys: Record<string, StoredAppKey>;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
  lastUsedAt: Date | null;
}

/** Map key of a kid (kids may hold `.` or `$`, which field names cannot). */
export const kidField = (kid: string) => Buffer.from(kid, 'utf8').toString('base64url');
