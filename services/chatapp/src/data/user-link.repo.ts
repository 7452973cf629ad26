import type { Connection } from '@platform/mongo';
import { userLinkModel } from './user-link.model';

/** A link between a chat user and a platform user as the domain sees it: a plain object (the model's document type stays in data/). */
export interface StoredUserLink {
  _id: string;
  linkId: string;
  tenantId: string;
  teamId: string;
  chatappUserId: string;
  chatappUsername?: string | null;
  chatappEmail?: string | null;
  chatappDisplayName?: string | null;
  userId: string;
  appUserEmail?: string | null;
  connectionId: string;
  linkedAt: Date;
  lastUsedAt?: Date | null;
}

export type UserLinkRepo = ReturnType<typeof userLinkRepo>;

const idOf = (tenantId: string, teamId: string, chatappUserId: string) => `${tenantId}:${teamId}:${chatappUserId}`;

export function userLinkRepo(db: Connection) {
  const Model = userLinkModel(db);
  return {
    model: Model,
    /** Links (or re-links) a chat user; a new link id each time. */
    async link(l: Omit<StoredUserLink, '_id' | 'lastUsedAt'>): Promise<StoredUserLink> {
      const _id = idOf(l.tenantId, l.teamId, l.chatappUserId);
      return (await Model.findOneAndUpdate(
        { _id },
        { $set: { ...l, lastUsedAt: null } },
        { upsert: true, new: true },
      ).lean())!;
    },
    async findByChatUser(tenantId: string, teamId: string, chatappUserId: string): Promise<StoredUserLink | null> {
      return Model.findOne({ _id: idOf(tenantId, teamId, chatappUserId) }).lean();
    },
    async latestOfUser(tenantId: string, userId: string): Promise<StoredUserLink | null> {
      return Model.findOne({ tenantId, userId }).sort({ linkedAt: -1 }).lean();
    },
    async listOfTeam(tenantId: string, teamId: string): Promise<StoredUserLink[]> {
      return Model.find({ tenantId, teamId }).sort({ linkedAt: 1, _id: 1 }).limit(1000).lean();
    },
    async removeChatUser(tenantId: string, teamId: string, chatappUserId: string, userId?: string): Promise<number> {
      const r = await Model.deleteOne({ _id: idOf(tenantId, teamId, chatappUserId), ...(userId ? { userId } : {}) });
      return r.deletedCount ?? 0;
    },
    async removeUser(tenantId: string, userId: string): Promise<number> {
      const r = await Model.deleteMany({ tenantId, userId });
      return r.deletedCount ?? 0;
    },
    async removeAllOfTeam(tenantId: string, teamId: string): Promise<number> {
      const r = await Model.deleteMany({ tenantId, teamId });
      return r.deletedCount ?? 0;
    },
  };
}
