import { mongoose, type Connection, type Model } from '@platform/mongo';

/** `_id` is `<tenant>:<project>:<id>`. `config` is JSON text (JSON Schemas carry `$` keys). */
const schema = new mongoose.Schema(
  {
    _id: { type: String },
    id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    name: { type: String, required: true },
    description: { type: String, default: null },
    kind: { type: String, required: true },
    config: { type: String, required: true },
    agentIds: { type: [String], default: [] },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'evaluators', versionKey: false },
);
schema.index({ tenantId: 1, projectId: 1, createdAt: -1 });

export function evaluatorModel(db: Connection): Model<any> {
  return db.models.Evaluator ?? db.model('Evaluator', schema);
}

export interface EvaluatorDoc {
  _id: string;
  id: string;
  tenantId: string;
  projectId: string;
  name: string;
  description: string | null;
  kind: string;
  config: string;
  agentIds: string[];
  createdAt: Date;
  updatedAt: Date;
}
