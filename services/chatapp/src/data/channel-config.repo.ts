import type { Connection } from '@platform/mongo';
import { channelConfigModel, type ChannelConfigDoc } from './channel-config.model';

export type ChannelConfigRepo = ReturnType<typeof channelConfigRepo>;

const idOf = (teamId: string, channelId: string) => `${teamId}:${channelId}`;

export function channelConfigRepo(db: Connection) {
  const Model = channelConfigModel(db);
  return {
    model: Model,
    /** Creates or replaces the channel's agent; keeps the config id of an existing one. */
    async upsert(c: Omit<ChannelConfigDoc, '_id' | 'createdAt' | 'updatedAt'>): Promise<ChannelConfigDoc> {
      const now = new Date();
      const { configId, ...fields } = c;
      return (await Model.findOneAndUpdate(
        { _id: idOf(c.teamId, c.channelId), tenantId: c.tenantId },
        { $set: { ...fields, updatedAt: now }, $setOnInsert: { configId, createdAt: now } },
        { upsert: true, new: true },
      ).lean())!;
    },
    async find(tenantId: string, teamId: string, channelId: string): Promise<ChannelConfigDoc | null> {
      return Model.findOne({ _id: idOf(teamId, channelId), tenantId }).lean();
    },
    async findMany(tenantId: string, teamId: string, channelIds: string[]): Promise<ChannelConfigDoc[]> {
      if (!channelIds.length) return [];
      return Model.find({ _id: { $in: channelIds.map((c) => idOf(teamId, c)) }, tenantId }).lean();
    },
    /** Workspaces of a tenant that have a setting for the channel (to route channel posts). */
    async teamsWithChannel(tenantId: string, channelId: string): Promise<string[]> {
      const rows = await Model.find({ tenantId, channelId }, { teamId: 1 }).limit(10).lean<Array<{ teamId: string }>>();
      return rows.map((r) => r.teamId);
    },
    async remove(tenantId: string, teamId: string, channelId: string): Promise<boolean> {
      const r = await Model.deleteOne({ _id: idOf(teamId, channelId), tenantId });
      return r.deletedCount === 1;
    },
    async removeMany(tenantId: string, teamId: string, channelIds: string[]): Promise<number> {
      const r = await Model.deleteMany({ _id: { $in: channelIds.map((c) => idOf(teamId, c)) }, tenantId });
      return r.deletedCount ?? 0;
    },
    async removeAllOfTeam(tenantId: string, teamId: string): Promise<number> {
      const r = await Model.deleteMany({ tenantId, teamId });
      return r.deletedCount ?? 0;
    },
  };
}
