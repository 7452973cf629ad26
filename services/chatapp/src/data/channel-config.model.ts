import { mongoose, type Connection, type Model } from '@platform/mongo';

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

export function channelConfigModel(db: Connection): Model<any> {
  return db.models.ChatChannelConfig ?? db.model('ChatChannelConfig', schema);
}

export interface ChannelConfigDoc {
  _id: string;
  configId: string;
  tenantId: string;
  teamId: string;
  channelId: string;
  channelName: string | null;
  channelType: string | null;
  agentId: string;
  projectId: string;
  grantAccessToMembers: boolean;
  createdAt: Date;
  updatedAt: Date;
}
