import type { Credential, CredentialCreate, CredentialUpdate, Principal, ProjectScope } from '@platform/contracts';
import { AppError } from '@platform/problems';
import { unprocessable } from './unprocessable';
import { type CredentialRepo, toCredential, type StoredCredential } from '../data/credential.repo';
import type { TriggerRepo } from '../data/trigger.repo';
import { canonicalJson } from './canonical-json';
import { dropStoreEntry, storeTypeOf, type CredentialStoreDeps } from './credential-stores';

export interface CredentialDeps extends CredentialStoreDeps {
  credentials: CredentialRepo;
  triggers: TriggerRepo;
}

const notFound = () => new AppError('not_found', 'Credential not found');

/** A credential naming one of our stores must have that store's type. */
function assertStoreMatchesType(storeId: string, type: string): void {
  const storeType = storeTypeOf(storeId);
  if (storeType && storeType !== type) {
    throw unprocessable([
      {
        pointer: '/type',
        detail: `credential store '${storeId}' is a ${storeType} store, so type must be ${storeType}`,
      },
    ]);
  }
}

export const principalUserId = (p: Principal): string | null => (p.kind === 'user' ? p.userId : null);

/** What identifies a credential's content (for the identical-retry check). */
function content(
  d: Pick<
    StoredCredential,
    'name' | 'type' | 'credentialStoreId' | 'createdBy' | 'toolId' | 'userId' | 'retrievalParamsJson'
  >,
): string {
  return canonicalJson({
    name: d.name,
    type: d.type,
    credentialStoreId: d.credentialStoreId,
    createdBy: d.createdBy ?? null,
    toolId: d.toolId ?? null,
    userId: d.userId ?? null,
    retrievalParams: d.retrievalParamsJson ? JSON.parse(d.retrievalParamsJson) : null,
  });
}

/**
 * Creates a credential reference. Repeating a create with the same id and identical content answers with the
 * stored record (`created: false`, 200); the same id with other content is a 409.
 */
export async function addCredential(
  deps: CredentialDeps,
  scope: ProjectScope,
  input: CredentialCreate,
  principal: Principal,
): Promise<{ created: boolean; credential: Credential }> {
  assertStoreMatchesType(input.credentialStoreId, input.type);
  const now = new Date();
  const doc: Omit<StoredCredential, '_id'> = {
    id: input.id,
    ...scope,
    name: input.name,
    type: input.type,
    credentialStoreId: input.credentialStoreId,
    createdBy: input.createdBy ?? principalUserId(principal),
    toolId: input.toolId ?? null,
    userId: input.userId ?? null,
    retrievalParamsJson: input.retrievalParams ? JSON.stringify(input.retrievalParams) : null,
    revision: 1,
    createdAt: now,
    updatedAt: now,
  };
  const inserted = await deps.credentials.insert(doc);
  if (inserted) return { created: true, credential: toCredential(inserted) };
  const existing = await deps.credentials.findById(scope, input.id);
  if (existing && content(existing) === content(doc)) return { created: false, credential: toCredential(existing) };
  throw new AppError('conflict', `A credential with id "${input.id}" already exists with other content`);
}

export async function findCredential(deps: CredentialDeps, scope: ProjectScope, id: string): Promise<Credential> {
  const doc = await deps.credentials.findById(scope, id);
  if (!doc) throw notFound();
  return toCredential(doc);
}

export async function listCredentialsPage(deps: CredentialDeps, scope: ProjectScope, page: number, limit: number) {
  const { rows, total } = await deps.credentials.list(scope, page, limit);
  return { rows: rows.map(toCredential), total };
}

export async function changeCredential(
  deps: CredentialDeps,
  scope: ProjectScope,
  id: string,
  input: CredentialUpdate,
): Promise<Credential> {
  if (input.id !== undefined && input.id !== id)
    throw unprocessable([{ pointer: '/id', detail: 'ids cannot be changed; create a new credential instead' }]);
  for (let attempt = 0; attempt < 5; attempt++) {
    const current = await deps.credentials.findById(scope, id);
    if (!current) throw notFound();
    const set: Partial<StoredCredential> = { updatedAt: new Date() };
    if (input.name !== undefined) set.name = input.name;
    if (input.type !== undefined) set.type = input.type;
    if (input.credentialStoreId !== undefined) set.credentialStoreId = input.credentialStoreId;
    if (input.createdBy !== undefined) set.createdBy = input.createdBy;
    if (input.toolId !== undefined) set.toolId = input.toolId;
    if (input.userId !== undefined) set.userId = input.userId;
    if (input.retrievalParams !== undefined)
      set.retrievalParamsJson = input.retrievalParams ? JSON.stringify(input.retrievalParams) : null;
    assertStoreMatchesType(set.credentialStoreId ?? current.credentialStoreId, set.type ?? current.type);
    const updated = await deps.credentials.update(current, set);
    if (updated) return toCredential(updated);
  }
  throw new AppError('conflict', 'The credential changed concurrently; retry');
}

/** Deletes a credential (and the memory-store entry its `retrievalParams.key` names). Refused while a trigger uses it. */
export async function removeCredential(deps: CredentialDeps, scope: ProjectScope, id: string): Promise<void> {
  const current = await deps.credentials.findById(scope, id);
  if (!current) throw notFound();
  const users = await deps.triggers.usingCredential(scope, id);
  if (users.length) {
    const list = users.map((t) => `${t.agentId}/${t.id}`).join(', ');
    throw new AppError(
      'conflict',
      `The credential is the signing secret of trigger(s) ${list}; change or delete them first`,
    );
  }
  if (!(await deps.credentials.remove(scope, id))) throw notFound();
  const key = current.retrievalParamsJson
    ? (JSON.parse(current.retrievalParamsJson) as { key?: unknown }).key
    : undefined;
  if (typeof key === 'string') await dropStoreEntry(deps, scope, current.credentialStoreId, key);
}
