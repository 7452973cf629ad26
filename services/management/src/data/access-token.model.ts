import { mongoose, type Connection, type Model, type StoredDoc } from '@platform/mongo';

/** Management access tokens: `_id` is the token's public id; only a keyed hash of the secret is stored. */
const schema = new mongoose.Schema(
  {
    _id: { type: String },
    tenantId: { type: String, required: true },
    name: { type: String, required: true },
    role: { type: String, required: true },
    userId: { type: String, required: true },
    tokenHash: { type: String, required: true },
    expiresAt: { type: Date, default: null },
    createdAt: { type: Date, required: true },
  },
  { collection: 'accessTokens', versionKey: false },
);
schema.index({ tenantId: 1, createdAt: -1, _id: 1 });

// role is a plain String the code only ever writes one of these values to.
export type AccessTokenDoc = StoredDoc<typeof schema, string, { role: 'owner' | 'admin' | 'member' | 'viewer' }>;

export function accessTokenModel(db: Connection): Model<AccessTokenDoc> {
  return db.models.AccessToken ?? db.model<AccessTokenDoc>('AccessToken', schema);
}
