import { mongoose, type Connection, type Model } from '@platform/mongo';

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

export function accessTokenModel(db: Connection): Model<any> {
  return db.models.AccessToken ?? db.model('AccessToken', schema);
}
export type AccessTokenDoc = {
  _id: string;
  tenantId: string;
  name: string;
  role: 'owner' | 'admin' | 'member' | 'viewer';
  userId: string;
  tokenHash: string;
  expiresAt: Date | null;
  createdAt: Date;
};
