import { mongoose, scopedSchema, type Connection, type Model, type StoredDoc } from '@platform/mongo';
import { outboxFields, type PendingEventsField } from '@platform/outbox';

/**
 * `_id` is `<tenant>:<project>:<id>`. Written once, through the outbox with its work items (published to the EVAL_WORK
 * stream once it is stored); never changed afterwards. Progress lives in the results.
 */
const runSchema = scopedSchema(
  {
    conversationIds: { type: [String], required: true },
    evaluatorIds: { type: [String], required: true },
    totalItems: { type: Number, required: true },
    createdAt: { type: Date, required: true },
    ...outboxFields,
  },
  { collection: 'evaluationRuns', timestamps: false, minimize: false },
);
runSchema.index({ tenantId: 1, projectId: 1, createdAt: -1 });

/** Insert-once marker: the first worker to pick up an item of a run records when it started. */
const startSchema = new mongoose.Schema(
  { _id: { type: String }, startedAt: { type: Date, required: true } },
  { collection: 'evaluationRunStarts', versionKey: false },
);

// pendingEvents is a Mixed path (InferSchemaType types it as `any`).
export type EvaluationRunDoc = StoredDoc<typeof runSchema, string, PendingEventsField>;
export type EvaluationRunStartDoc = StoredDoc<typeof startSchema>;

export function evaluationRunModel(db: Connection): Model<EvaluationRunDoc> {
  return db.models.EvaluationRun ?? db.model<EvaluationRunDoc>('EvaluationRun', runSchema);
}
export function evaluationRunStartModel(db: Connection): Model<EvaluationRunStartDoc> {
  return db.models.EvaluationRunStart ?? db.model<EvaluationRunStartDoc>('EvaluationRunStart', startSchema);
}
