import type { Credential, CredentialType, ProjectScope } from '@platform/contracts';
import { iso, scoped, scopedId, type Connection, listPage, projectRecords } from '@platform/mongo';
import { credentialModel, type CredentialDoc } from './credential.model';

/** A credential as the domain sees it: a plain object (the model's document type stays in data/). */
export interface StoredCredential {
  _id: string;
  id: string;
  tenantId: string;
  projectId: string;
  name: string;
  type: string;
  credentialStoreId: string;
  createdBy?: string | null;
  toolId?: string | null;
  userId?: string | null;
  retrievalParamsJson?: string | null;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
}

export function toCredential(d: StoredCredential): Credential {
  return {
    id: d.id,
    name: d.name,
    type: d.type as CredentialType,
    credentialStoreId: d.credentialStoreId,
    createdBy: d.createdBy ?? null,
    toolId: d.toolId ?? null,
    userId: d.userId ?? null,
    retrievalParams: d.retrievalParamsJson ? (JSON.parse(d.retrievalParamsJson) as Record<string, unknown>) : null,
    // Tools and external agents are not resources of this service yet: nothing can use a credential so far.
    externalAgents: [],
    tools: [],
    createdAt: iso(d.createdAt)!,
    updatedAt: iso(d.updatedAt)!,
  };
}

export type CredentialRepo = ReturnType<typeof credentialRepo>;

export function credentialRepo(db: Connection) {
  const Model = credentialModel(db);
  /** insert (null when the id is taken), findById, and update at the revision read (null when it moved on). */
  const records = projectRecords<CredentialDoc, StoredCredential>(Model);
  return {
    model: Model,
    ...records,
    async list(scope: ProjectScope, page: number, limit: number) {
      return listPage(Model, { filter: scoped(scope), sort: { createdAt: -1, _id: 1 } }, page, limit);
    },
    async remove(scope: ProjectScope, id: string): Promise<boolean> {
      const r = await Model.deleteOne({ _id: scopedId(scope, id), ...scoped(scope) });
      return r.deletedCount === 1;
    },
  };
}
