import { scopedSchema, type Connection, type Model, type StoredDoc } from '@platform/mongo';

/** `_id` is `<tenant>:<project>:<id>`. `config` is JSON text (JSON Schemas carry `$` keys). */
const schema = scopedSchema(
  {
    name: { type: String, required: true },
    description: { type: String, default: null },
    kind: { type: String, required: true },
    config: { type: String, required: true },
    agentIds: { type: [String], default: [] },
  },
  { collection: 'evaluators' },
);
schema.index({ tenantId: 1, projectId: 1, createdAt: -1 });

export type EvaluatorDoc = StoredDoc<typeof schema>;

export function evaluatorModel(db: Connection): Model<EvaluatorDoc> {
  return db.models.Evaluator ?? db.model<EvaluatorDoc>('Evaluator', schema);
}
