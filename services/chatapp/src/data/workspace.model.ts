import { mongoose, type Connection, type Model, type SealedFields, type StoredDoc } from '@platform/mongo';
import type { SealedBinding } from '@platform/secrets';

/** One installation per chat workspace; `_id` is the team id (a workspace belongs to one tenant at a time). */
const schema = new mongoose.Schema(
  {
    _id: { type: String },
    tenantId: { type: String, required: true },
    projectId: { type: String, default: null },
    connectionId: { type: String, required: true },
    teamName: { type: String, required: true },
    teamDomain: { type: String, default: null },
    appId: { type: String, default: null },
    botUserId: { type: String, default: null },
    /** SecretBox-sealed bot token, bound to the workspace (`workspaceBinding`). */
    botTokenSealed: { type: String, required: true },
    scopes: { type: [String], default: [] },
    installerUserId: { type: String, default: null },
    incomingWebhook: { type: mongoose.Schema.Types.Mixed, default: null },
    defaultAgent: { type: mongoose.Schema.Types.Mixed, default: null },
    shouldAllowJoinFromWorkspace: { type: Boolean, default: false },
    installedAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'chatWorkspaces', versionKey: false, minimize: false },
);
schema.index({ tenantId: 1, installedAt: 1 });

// incomingWebhook and defaultAgent are Mixed paths (InferSchemaType types them as `any`).
export type WorkspaceDoc = StoredDoc<
  typeof schema,
  string,
  {
    /** Sealed URL and the channel it posts to (when installed with include_webhook). */
    incomingWebhook: { channelId: string | null; channel: string | null; urlSealed: string } | null;
    defaultAgent: DefaultAgentDoc | null;
  }
>;

export function workspaceModel(db: Connection): Model<WorkspaceDoc> {
  return db.models.ChatWorkspace ?? db.model<WorkspaceDoc>('ChatWorkspace', schema);
}

export interface DefaultAgentDoc {
  agentId: string;
  projectId: string;
  grantAccessToMembers: boolean;
  agentName: string;
}

const COLLECTION = 'chatWorkspaces';

/** The record a workspace's sealed values (bot token, incoming-webhook URL) are bound to: its tenant and team. */
export const workspaceBinding = (ws: { _id: string; tenantId: string }): SealedBinding => ({
  tenantId: ws.tenantId,
  collection: COLLECTION,
  recordId: ws._id,
});

/** The sealed values of each workspace (`pnpm secrets:reencrypt`). */
export const workspaceSealed: SealedFields<WorkspaceDoc> = {
  collection: COLLECTION,
  fields: ['botTokenSealed', 'incomingWebhook.urlSealed'],
  bindingOf: workspaceBinding,
};
