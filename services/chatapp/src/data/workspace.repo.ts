import { isDuplicateKey, type Connection } from '@platform/mongo';
import { workspaceModel, type DefaultAgentDoc, type WorkspaceDoc } from './workspace.model';

export type WorkspaceRepo = ReturnType<typeof workspaceRepo>;

export function workspaceRepo(db: Connection) {
  const Model = workspaceModel(db);
  return {
    model: Model,
    /**
     * Stores an installation: new, or a reinstall by the same tenant (keeps settings and the connection id).
     * Returns null when the workspace is installed for another tenant.
     */
    async upsertInstall(doc: Omit<WorkspaceDoc, 'defaultAgent' | 'shouldAllowJoinFromWorkspace' | 'installedAt' | 'connectionId'> & { connectionId: string }, now: Date) {
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
    async findByTeam(teamId: string): Promise<WorkspaceDoc | null> {
      return Model.findOne({ _id: teamId }).lean();
    },
    async listByTenant(tenantId: string | undefined): Promise<WorkspaceDoc[]> {
      return Model.find(tenantId === undefined ? {} : { tenantId }).sort({ installedAt: 1, _id: 1 }).limit(1000).lean();
    },
    async setDefaultAgent(teamId: string, tenantId: string, agent: DefaultAgentDoc | null): Promise<boolean> {
      const r = await Model.updateOne({ _id: teamId, tenantId }, { $set: { defaultAgent: agent, updatedAt: new Date() } });
      return r.matchedCount === 1;
    },
    async setJoinFromWorkspace(teamId: string, tenantId: string, allow: boolean): Promise<boolean> {
      const r = await Model.updateOne({ _id: teamId, tenantId }, { $set: { shouldAllowJoinFromWorkspace: allow, updatedAt: new Date() } });
      return r.matchedCount === 1;
    },
    async remove(teamId: string, tenantId: string): Promise<boolean> {
      const r = await Model.deleteOne({ _id: teamId, tenantId });
      return r.deletedCount === 1;
    },
  };
}
