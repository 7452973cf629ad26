import { isDuplicateKey, type Connection } from '@platform/mongo';
import { workspaceModel, type DefaultAgentDoc } from './workspace.model';
export { workspaceBinding } from './workspace.model';

/** A connected workspace as the domain sees it: a plain object (the model's document type stays in data/). */
export interface StoredWorkspace {
  _id: string;
  tenantId: string;
  projectId?: string | null;
  connectionId: string;
  teamName: string;
  teamDomain?: string | null;
  appId?: string | null;
  botUserId?: string | null;
  botTokenSealed: string;
  scopes: string[];
  installerUserId?: string | null;
  shouldAllowJoinFromWorkspace: boolean;
  installedAt: Date;
  updatedAt: Date;
  incomingWebhook: { channelId: string | null; channel: string | null; urlSealed: string } | null;
  defaultAgent: DefaultAgentDoc | null;
}

export type WorkspaceRepo = ReturnType<typeof workspaceRepo>;

export function workspaceRepo(db: Connection) {
  const Model = workspaceModel(db);
  return {
    model: Model,
    /**
     * Stores an installation: new, or a reinstall by the same tenant (keeps settings and the connection id).
     * Returns null when the workspace is installed for another tenant.
     */
    async upsertInstall(
      doc: Omit<StoredWorkspace, 'defaultAgent' | 'shouldAllowJoinFromWorkspace' | 'installedAt' | 'connectionId'> & {
        connectionId: string;
      },
      now: Date,
    ) {
      const { _id, tenantId, connectionId, ...fields } = doc;
      try {
        return await Model.findOneAndUpdate(
          { _id, tenantId },
          {
            $set: { ...fields, updatedAt: now },
            $setOnInsert: { connectionId, defaultAgent: null, shouldAllowJoinFromWorkspace: false, installedAt: now },
          },
          { upsert: true, new: true },
        ).lean();
      } catch (err) {
        if (isDuplicateKey(err)) return null;
        throw err;
      }
    },
    async findByTeam(teamId: string): Promise<StoredWorkspace | null> {
      return Model.findOne({ _id: teamId }).lean();
    },
    async listByTenant(tenantId: string | undefined): Promise<StoredWorkspace[]> {
      return Model.find(tenantId === undefined ? {} : { tenantId })
        .sort({ installedAt: 1, _id: 1 })
        .limit(1000)
        .lean();
    },
    async setDefaultAgent(teamId: string, tenantId: string, agent: DefaultAgentDoc | null): Promise<boolean> {
      const r = await Model.updateOne(
        { _id: teamId, tenantId },
        { $set: { defaultAgent: agent, updatedAt: new Date() } },
      );
      return r.matchedCount === 1;
    },
    async setJoinFromWorkspace(teamId: string, tenantId: string, allow: boolean): Promise<boolean> {
      const r = await Model.updateOne(
        { _id: teamId, tenantId },
        { $set: { shouldAllowJoinFromWorkspace: allow, updatedAt: new Date() } },
      );
      return r.matchedCount === 1;
    },
    async remove(teamId: string, tenantId: string): Promise<boolean> {
      const r = await Model.deleteOne({ _id: teamId, tenantId });
      return r.deletedCount === 1;
    },
  };
}
