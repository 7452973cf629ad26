import { mongoose, type Connection, type Model, type StoredDoc } from '@platform/mongo';
import type { StoredSigningKey } from '../domain/signing-keys';

/**
 * One document per signing key, written once and never updated (insert-only: no read-modify-write on FerretDB).
 * `_id` is the key id (the RFC 7638 thumbprint of the public key). `ring` names the ENCRYPTION_KEY the private key is
 * sealed with (a keyed hash of it), so processes with another ENCRYPTION_KEY never see keys they cannot open.
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
