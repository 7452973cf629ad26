import type { ProjectScope } from '@platform/contracts';
import { isDuplicateKey, scoped, type Connection } from '@platform/mongo';
import {
  credentialEntryId as entryId,
  credentialStoreEntryModel,
  type CredentialStoreEntryDoc,
} from './credential-store-entry.model';
export { credentialEntryBinding, credentialEntrySealed } from './credential-store-entry.model';

export type CredentialStoreEntryRepo = ReturnType<typeof credentialStoreEntryRepo>;

export function credentialStoreEntryRepo(db: Connection) {
  const Model = credentialStoreEntryModel(db);
  return {
    model: Model,
    /** Writes (or replaces) the sealed value of a key; says whether the key was new. */
    async put(
      scope: ProjectScope,
      storeId: string,
      key: string,
      sealed: string,
    ): Promise<{ created: boolean; doc: CredentialStoreEntryDoc }> {
      const _id = entryId(scope, storeId, key);
      const now = new Date();
      const write = () =>
        Model.updateOne(
          { _id },
          { $set: { sealed, updatedAt: now }, $setOnInsert: { ...scoped(scope), storeId, key, createdAt: now } },
          { upsert: true },
        );
      // Two first writes of one key race on the insert: the loser retries as an update.
      const r = await write().catch((err: unknown) => {
        if (isDuplicateKey(err)) return write();
        throw err;
      });
      const doc = await Model.findOne({ _id }).lean();
      return { created: (r.upsertedCount ?? 0) > 0, doc: doc! };
    },
    async find(scope: ProjectScope, storeId: string, key: string): Promise<CredentialStoreEntryDoc | null> {
      return Model.findOne({ _id: entryId(scope, storeId, key), ...scoped(scope) }).lean();
    },
    async remove(scope: ProjectScope, storeId: string, key: string): Promise<boolean> {
      const r = await Model.deleteOne({ _id: entryId(scope, storeId, key), ...scoped(scope) });
      return r.deletedCount === 1;
    },
  };
}
