import { mongoose, type Connection, type Model, type SealedFields, type StoredDoc } from '@platform/mongo';
import type { SealedBinding, SecretBox } from '@platform/secrets';
import type { StoredSigningKey } from '../domain/signing-keys';

/**
 * One document per signing key, written once and never updated (insert-only: no read-modify-write on FerretDB).
 * `_id` is the key id (the RFC 7638 thumbprint of the public key). `ring` names the sealing key the private key is
 * sealed under (a keyed hash of it), so a process reads only the keys its ENCRYPTION_KEYS open (`signingKeyRings`).
 * The document is never updated, except by `pnpm secrets:reencrypt`, which seals the private key again under the
 * newest sealing key and moves it to that key's ring.
 */
const schema = new mongoose.Schema(
  {
    _id: { type: String },
    ring: { type: String, required: true },
    alg: { type: String, required: true },
    publicJwk: { type: mongoose.Schema.Types.Mixed, required: true },
    sealedPrivateJwk: { type: String, required: true },
    createdAt: { type: Date, required: true },
  },
  { collection: 'signingKeys', versionKey: false, minimize: false },
);
schema.index({ ring: 1, createdAt: -1 });

// publicJwk is Mixed (InferSchemaType types it as `any`); alg is a plain String the code only ever writes one of its algorithms to.
export type SigningKeyDoc = StoredDoc<typeof schema, string, Pick<StoredSigningKey, 'alg' | 'publicJwk'>>;

export function signingKeyModel(db: Connection): Model<SigningKeyDoc> {
  return db.models.SigningKey ?? db.model<SigningKeyDoc>('SigningKey', schema);
}

const COLLECTION = 'signingKeys';

/** The record a signing key's sealed private key is bound to: the key itself (a platform record, no tenant). */
export const signingKeyBinding = (kid: string): SealedBinding => ({
  tenantId: null,
  collection: COLLECTION,
  recordId: kid,
});

/** The rings of the sealing keys, newest first: new signing keys go into the first; a process reads them all. */
export const signingKeyRings = (box: SecretBox) =>
  box.derivedSecrets('credential-gateway:signing-key-ring').map((r) => r.slice(0, 22));

/** The sealed private key of each signing key (`pnpm secrets:reencrypt`), moved to the newest key's ring. */
export const signingKeySealed: SealedFields<SigningKeyDoc> = {
  collection: COLLECTION,
  fields: ['sealedPrivateJwk'],
  bindingOf: (d) => signingKeyBinding(d._id),
  alsoSet: (_d, box) => ({ ring: signingKeyRings(box)[0] }),
};
