import type {
  CredentialStore,
  CredentialStoreEntry,
  CredentialStoreEntryCreate,
  CredentialType,
  ProjectScope,
} from '@platform/contracts';
import { AppError } from '@platform/problems';
import type { SecretBox } from '@platform/secrets';
import { iso } from '@platform/contracts';
import { type CredentialStoreEntryRepo, credentialEntryBinding } from '../data/credential-store-entry.repo';

export interface CredentialStoreDeps {
  entries: CredentialStoreEntryRepo;
  box: SecretBox;
}

/**
 * The stores this deployment knows. `memory` is our own collection, encrypted at rest (ENCRYPTION_KEYS).
 * The others say why they cannot be used rather than pretending: a server process has no OS keychain, and no
 * connection-broker client is built into this deployment.
 */
export const CREDENTIAL_STORES: ReadonlyArray<CredentialStore> = [
  { id: 'memory-default', type: 'memory', available: true, reason: null },
  {
    id: 'keychain-default',
    type: 'keychain',
    available: false,
    reason: 'No OS keychain is reachable from the platform servers; use the memory store (encrypted at rest)',
  },
  {
    id: 'connbroker1-default',
    type: 'connbroker1',
    available: false,
    reason: 'connbroker1 is not configured: this deployment has no connbroker1 connection',
  },
  {
    id: 'connbroker2-default',
    type: 'connbroker2',
    available: false,
    reason: 'connbroker2 is not configured: this deployment has no connbroker2 connection',
  },
];

export function credentialStores(): CredentialStore[] {
  return CREDENTIAL_STORES.map((s) => ({ ...s }));
}

/** The store of a known id, or undefined. */
export function knownStore(id: string): CredentialStore | undefined {
  return CREDENTIAL_STORES.find((s) => s.id === id);
}

export function storeTypeOf(id: string): CredentialType | undefined {
  return knownStore(id)?.type;
}

/** Seals `{value, metadata}` and writes it under `key`. The value is never returned, logged or stored in plaintext. */
export async function putStoreEntry(
  deps: CredentialStoreDeps,
  scope: ProjectScope,
  storeId: string,
  input: CredentialStoreEntryCreate,
): Promise<{ created: boolean; entry: CredentialStoreEntry }> {
  const store = knownStore(storeId);
  if (!store) throw new AppError('not_found', `Credential store '${storeId}' not found`);
  if (!store.available)
    throw new AppError('unprocessable_entity', `Credential store '${storeId}' is not available: ${store.reason}`);
  const sealed = deps.box.seal(
    JSON.stringify({ value: input.value, metadata: input.metadata ?? {} }),
    credentialEntryBinding(scope, storeId, input.key),
  );
  const { created, doc } = await deps.entries.put(scope, storeId, input.key, sealed);
  return { created, entry: { key: doc.key, storeId: doc.storeId, createdAt: iso(doc.createdAt)! } };
}

/** Removes a key from a store we hold (the memory store); other stores hold nothing here. */
export async function dropStoreEntry(
  deps: CredentialStoreDeps,
  scope: ProjectScope,
  storeId: string,
  key: string,
): Promise<void> {
  if (knownStore(storeId)?.type !== 'memory') return;
  await deps.entries.remove(scope, storeId, key);
}
