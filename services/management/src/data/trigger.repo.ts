import type { AgentPath, ProjectScope } from '@platform/contracts';
import { type Connection, listPage, insertUnlessTaken, updateAtRevision } from '@platform/mongo';
import { triggerModel, type StoredAuthHeader } from './trigger.model';
export type { StoredAuthHeader };

/** A trigger as the domain sees it: a plain object (the model's document type stays in data/). */
export interface StoredTrigger {
  _id: string;
  id: string;
  tenantId: string;
  projectId: string;
  agentId: string;
  name: string;
  description?: string | null;
  enabled: boolean;
  dispatchDelayMs: number;
  messageTemplate?: string | null;
  inputSchemaJson?: string | null;
  outputTransformJson?: string | null;
  runAsUserId?: string | null;
  runAsUserIds: string[];
  createdBy?: string | null;
  signingSecretCredentialReferenceId?: string | null;
  signatureVerificationJson?: string | null;
  deliveryIdHeader?: string | null;
  rateLimitPerMinute?: number | null;
  bodyLimitBytes?: number | null;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
  authentication: { headers: StoredAuthHeader[] } | null;
}

const triggerId = (scope: AgentPath, id: string) => `${scope.tenantId}:${scope.projectId}:${scope.agentId}:${id}`;
const scopedToAgent = (scope: AgentPath) => ({
  tenantId: scope.tenantId,
  projectId: scope.projectId,
  agentId: scope.agentId,
});

export type TriggerRepo = ReturnType<typeof triggerRepo>;

export function triggerRepo(db: Connection) {
  const Model = triggerModel(db);
  return {
    model: Model,
    /** Throws a duplicate-key error when the id is taken for the agent. */
    /** Null when the id is taken. */
    async insert(doc: Omit<StoredTrigger, '_id'>): Promise<StoredTrigger | null> {
      const full: StoredTrigger = { _id: triggerId(doc, doc.id), ...doc };
      return insertUnlessTaken(Model, full);
    },
    async findById(scope: AgentPath, id: string): Promise<StoredTrigger | null> {
      return Model.findOne({ _id: triggerId(scope, id), ...scopedToAgent(scope) }).lean();
    },
    async list(scope: AgentPath, page: number, limit: number) {
      const q = scopedToAgent(scope);
      return listPage(Model, { filter: q, sort: { createdAt: -1, _id: 1 } }, page, limit);
    },
    /** Ids of the triggers of a project that use a credential as signing secret (at most `limit`). */
    async usingCredential(
      scope: ProjectScope,
      credentialId: string,
      limit = 5,
    ): Promise<Array<{ agentId: string; id: string }>> {
      return Model.find(
        { tenantId: scope.tenantId, projectId: scope.projectId, signingSecretCredentialReferenceId: credentialId },
        { _id: 0, agentId: 1, id: 1 },
      )
        .limit(limit)
        .lean<Array<{ agentId: string; id: string }>>();
    },
    /** Applies `set` only if nobody changed the trigger since `current` was read (null otherwise). */
    async update(current: StoredTrigger, set: Partial<StoredTrigger>): Promise<StoredTrigger | null> {
      return updateAtRevision(Model, current, set);
    },
    /** Deletes every trigger of an agent (the agent was deleted). */
    async removeAllOfAgent(scope: AgentPath): Promise<number> {
      return (await Model.deleteMany(scopedToAgent(scope))).deletedCount;
    },
    async remove(scope: AgentPath, id: string): Promise<boolean> {
      const r = await Model.deleteOne({ _id: triggerId(scope, id), ...scopedToAgent(scope) });
      return r.deletedCount === 1;
    },
  };
}
