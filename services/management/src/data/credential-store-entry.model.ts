import type { ProjectScope } from '@platform/contracts';
import { scopedSchema, type Connection, type Model, type SealedFields, type StoredDoc } from '@platform/mongo';
import { sha256Hex, type SealedBinding } from '@platform/secrets';

/**
 * A secret put into the `memory` credential store. `_id` is a hash of (tenant, project, store, key), so a key is
 * one row per store and project. `sealed` is the AES-GCM encryption of `{value, metadata}`, bound to the row
 * (`credentialEntrySealed`): no plaintext is stored.
 */
const schema = scopedSchema(
  {
    storeId: { type: String, required: true },
    key: { type: String, required: true },
    sealed: { type: String, required: true },
  },
  { collection: 'credentialStoreEntries', id: false, minimize: false },
);
schema.index({ tenantId: 1, projectId: 1, storeId: 1 });

export type CredentialStoreEntryDoc = StoredDoc<typeof schema>;

export function credentialStoreEntryModel(db: Connection): Model<CredentialStoreEntryDoc> {
  return db.models.CredentialStoreEntry ?? db.model<CredentialStoreEntryDoc>('CredentialStoreEntry', schema);
}

export const credentialEntryId = (scope: ProjectScope, storeId: string, key: string) =>
  sha256Hex(JSON.stringify([scope.tenantId, scope.projectId, storeId, key]));

const COLLECTION = 'credentialStoreEntries';

/** The row a store entry's sealed value is bound to. */
export const credentialEntryBinding = (scope: ProjectScope, storeId: string, key: string): SealedBinding => ({
  tenantId: scope.tenantId,
  collection: COLLECTION,
  recordId: credentialEntryId(scope, storeId, key),
});

/** The sealed value of each entry (`pnpm secrets:reencrypt`). */
export const credentialEntrySealed: SealedFields<CredentialStoreEntryDoc> = {
  collection: COLLECTION,
  fields: ['sealed'],
  bindingOf: (d) => ({ tenantId: d.tenantId, collection: COLLECTION, recordId: d._id }),
};
