import type { Connection } from '@platform/mongo';
import type { StoredSigningKey, SigningKeyStore } from '../domain/signing-keys';
import { signingKeyModel, type SigningKeyDoc } from './signing-key.model';

const toKey = (d: SigningKeyDoc): StoredSigningKey => ({
  kid: d._id,
  alg: d.alg,
  publicJwk: d.publicJwk,
  sealedPrivateJwk: d.sealedPrivateJwk,
  createdAt: new Date(d.createdAt),
});

/** The signing keys of the rings a process can open (`credentialGateway.signingKeys`); new keys go into the first. */
export function signingKeyRepo(
  db: Connection,
  rings: readonly string[],
): SigningKeyStore & { model: ReturnType<typeof signingKeyModel> } {
  const model = signingKeyModel(db);
  const ring = rings[0]!;
  const readable = { $in: [...rings] };
  return {
    model,
    async list() {
      const docs = await model.find({ ring: readable }).sort({ createdAt: -1 }).limit(100).lean();
      return docs.map(toKey);
    },
    async insert(key) {
      await model.create({
        _id: key.kid,
        ring,
        alg: key.alg,
        publicJwk: key.publicJwk,
        sealedPrivateJwk: key.sealedPrivateJwk,
        createdAt: key.createdAt,
      });
    },
    async remove(kids) {
      if (kids.length) await model.deleteMany({ ring: readable, _id: { $in: kids } });
    },
  };
}
