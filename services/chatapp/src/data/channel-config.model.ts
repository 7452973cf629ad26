import { mongoose, type Connection, type Model, type StoredDoc } from '@platform/mongo';

/** The agent of one channel; `_id` is `<teamId>:<channelId>`. */
const schema = new mongoose.Schema(
  {
    _id: { type: String },
    configId: { type: String, required: true },
    tenantId: { type: String, required: true },
    teamId: { type: String, required: true },
    channelId: { type: String, required: true },
    channelName: { type: String, default: null },
    channelType: { type: String, default: null },
    agentId: { type: String, required: true },
    projectId: { type: String, required: true },
    grantAccessToMembers: { type: Boolean, required: true },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'chatChannelConfigs', versionKey: false },
);
schema.index({ teamId: 1, channelId: 1 });
schema.index({ tenantId: 1, channelId: 1 });

export type ChannelConfigDoc = StoredDoc<typeof schema>;

export function channelConfigModel(db: Connection): Model<ChannelConfigDoc> {
  return db.models.ChatChannelConfig ?? db.model<ChannelConfigDoc>('ChatChannelConfig', schema);
}
