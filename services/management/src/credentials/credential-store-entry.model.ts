import { mongoose, type Connection, type Model, type StoredDoc } from '@platform/mongo';

/**
 * A secret put into the `memory` credential store. `_id` is a hash of (tenant, project, store, key), so a key is
 * one row per store and project. `sealed` is the AES-GCM encryption of `{value, metadata}`: no plaintext is stored.
 */
const schema = new mongoose.Schema(
  {
    _id: { type: String },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    storeId: { type: String, required: true },
    key: { type: String, required: true },
    sealed: { type: String, required: true },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'credentialStoreEntries', versionKey: false, minimize: false },
);
schema.index({ tenantId: 1, projectId: 1, storeId: 1 });

export type CredentialStoreEntryDoc = StoredDoc<typeof schema>;

export function credentialStoreEntryModel(db: Connection): Model<CredentialStoreEntryDoc> {
  return db.models.CredentialStoreEntry ?? db.model<CredentialStoreEntryDoc>('CredentialStoreEntry', schema);
}
