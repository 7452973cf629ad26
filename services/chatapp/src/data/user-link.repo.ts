import type { Connection } from '@platform/mongo';
import { userLinkModel, type UserLinkDoc } from './user-link.model';

export type UserLinkRepo = ReturnType<typeof userLinkRepo>;

const idOf = (tenantId: string, teamId: string, chatappUserId: string) => `${tenantId}:${teamId}:${chatappUserId}`;

export function userLinkRepo(db: Connection) {
  const Model = userLinkModel(db);
  return {
    model: Model,
    /** Links (or re-links) a chat user; a new link id each time. */
    async link(l: Omit<UserLinkDoc, '_id' | 'lastUsedAt'>): Promise<UserLinkDoc> {
      const _id = idOf(l.tenantId, l.teamId, l.chatappUserId);
      return (await Model.findOneAndUpdate({ _id }, { $set: { ...l, lastUsedAt: null } }, { upsert: true, new: true }).lean())!;
    },
    async findByChatUser(tenantId: string, teamId: string, chatappUserId: string): Promise<UserLinkDoc | null> {
      return Model.findOne({ _id: idOf(tenantId, teamId, chatappUserId) }).lean();
    },
    async latestOfUser(tenantId: string, userId: string): Promise<UserLinkDoc | null> {
      return Model.findOne({ tenantId, userId }).sort({ linkedAt: -1 }).lean();
    },
    async listOfTeam(tenantId: string, teamId: string): Promise<UserLinkDoc[]> {
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
