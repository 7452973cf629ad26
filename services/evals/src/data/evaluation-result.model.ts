import { scopedSchema, type Connection, type Model, type StoredDoc } from '@platform/mongo';
import { outboxFields, type PendingEventsField } from '@platform/outbox';

/**
 * `_id` is `<tenant>:<project>:<run>:<conversation>:<evaluator>`: a redelivered work item cannot store a second
 * result. Insert-only; a failed verdict carries its `evaluation.failed` event in the same insert (outbox).
 */
const schema = scopedSchema(
  {
    evaluationRunId: { type: String, required: true },
    conversationId: { type: String, required: true },
    evaluatorId: { type: String, required: true },
    status: { type: String, required: true },
    verdict: { type: String, default: null },
    output: { type: String, default: null },
    failedConditions: { type: String, default: '[]' },
    error: { type: String, default: null },
    createdAt: { type: Date, required: true },
    ...outboxFields,
  },
  { collection: 'evaluationResults', timestamps: false, minimize: false },
);
schema.index({ tenantId: 1, projectId: 1, evaluationRunId: 1, createdAt: 1 });

// status and verdict are plain Strings the code only ever writes one of these values to; pendingEvents is Mixed.
export type EvaluationResultDoc = StoredDoc<
  typeof schema,
  string,
  PendingEventsField & { status: 'completed' | 'error'; verdict: 'passed' | 'failed' | 'no_criteria' | null }
>;

export function evaluationResultModel(db: Connection): Model<EvaluationResultDoc> {
  return db.models.EvaluationResult ?? db.model<EvaluationResultDoc>('EvaluationResult', schema);
}
