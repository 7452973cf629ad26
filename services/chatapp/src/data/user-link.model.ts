import { mongoose, type Connection, type Model, type StoredDoc } from '@platform/mongo';

/** A chat user linked to a platform user; `_id` is `<tenantId>:<teamId>:<chatappUserId>` (one link per chat user). */
const schema = new mongoose.Schema(
  {
    _id: { type: String },
    linkId: { type: String, required: true },
    tenantId: { type: String, required: true },
    teamId: { type: String, required: true },
    chatappUserId: { type: String, required: true },
    chatappUsername: { type: String, default: null },
    chatappEmail: { type: String, default: null },
    chatappDisplayName: { type: String, default: null },
    userId: { type: String, required: true },
    appUserEmail: { type: String, default: null },
    connectionId: { type: String, required: true },
    linkedAt: { type: Date, required: true },
    lastUsedAt: { type: Date, default: null },
  },
  { collection: 'chatUserLinks', versionKey: false },
);
schema.index({ tenantId: 1, userId: 1, linkedAt: -1 });
schema.index({ teamId: 1, linkedAt: 1 });

export type UserLinkDoc = StoredDoc<typeof schema>;

export function userLinkModel(db: Connection): Model<UserLinkDoc> {
  return db.models.ChatUserLink ?? db.model<UserLinkDoc>('ChatUserLink', schema);
}
