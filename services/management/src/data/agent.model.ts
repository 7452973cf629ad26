import { mongoose, outboxFields, type Connection, type Model } from '@platform/mongo';

/**
 * One document per agent: `_id` is `<tenant>:<project>:<agentId>`. The definition and the sub-agent attachments are
 * kept as JSON text (`body`) in that one document, so a create, and every attachment change, is one atomic write
 * (guarded by `revision`), and free-form keys (ids with `.`, JSON-schema `$ref`) never meet field-name rules.
 */
const schema = new mongoose.Schema(
  {
    _id: { type: String },
    id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    name: { type: String, required: true },
    body: { type: String, required: true },
    /** Skills attached to any sub-agent (so deleting a skill can find its users). */
    skillIds: { type: [String], default: [] },
    revision: { type: Number, required: true },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
    ...outboxFields,
  },
  { collection: 'agents', versionKey: false, minimize: false },
);
schema.index({ tenantId: 1, projectId: 1, id: 1 });
schema.index({ tenantId: 1, projectId: 1, skillIds: 1 });

export function agentModel(db: Connection): Model<any> {
  return db.models.Agent ?? db.model('Agent', schema);
}

export interface AgentDoc {
  _id: string;
  id: string;
  tenantId: string;
  projectId: string;
  name: string;
  body: string;
  skillIds: string[];
  revision: number;
  createdAt: Date;
  updatedAt: Date;
}
