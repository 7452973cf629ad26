import { mongoose, scopedSchema, type Connection, type Model, type StoredDoc } from '@platform/mongo';
import { outboxFields, type PendingEventsField } from '@platform/outbox';

/**
 * An improvement branch is a set of insert-only collections, so no document has two writers (the Mongo-wire server
 * we run on loses one of two concurrent updates of a document):
 * - `improvementBranches`: the branch as created (never changed): the feedback, the focus agent and the ids of every
 *   agent copied (`agentIds`, `copyId`);
 * - `improvementBaseAgents`: the copy, one document per agent (`_id` `<copyId>#<agentId>`): the live definition
 *   (JSON text, without timestamps) and the `updatedAt` it had, so one large project never makes one large document;
 * - `improvementTurns`: one document per message (`_id` `<branch key>#<seq>`: the unique key serializes messages),
 *   inserted through the outbox with its work item (published to the EVAL_WORK queue once the turn is stored);
 * - `improvementTurnResults`: the answer to a message (`_id` = the turn's): inserted once by the worker that answered
 *   it (the unique key is the compare-and-set: a redelivered turn stores nothing new). `edits` is the branch after
 *   the turn: the definitions of the agents that differ from the copy (JSON text `{agentId: definition}`);
 * - `improvementDecisions`: at most one per branch (`_id` = branch key): merged or rejected. A merge lists the agents
 *   to write and the turn whose edits it applies; `completedAt` is set once every agent has its merge step;
 * - `improvementMergeSteps`: one per agent a merge wrote or skipped (`_id` `<branch key>#<agentId>`).
 */
const branchSchema = new mongoose.Schema(
  {
    _id: { type: String },
    branchName: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    agentId: { type: String, required: true },
    agentIds: { type: [String], default: [] },
    copyId: { type: String, required: true },
    conversationId: { type: String, required: true },
    feedbackItems: { type: String, required: true },
    additionalContext: { type: String, default: null },
    createdAt: { type: Date, required: true },
  },
  { collection: 'improvementBranches', versionKey: false },
);
branchSchema.index({ tenantId: 1, projectId: 1, createdAt: -1 });

const baseAgentSchema = new mongoose.Schema(
  {
    _id: { type: String },
    copyId: { type: String, required: true },
    agentId: { type: String, required: true },
    definition: { type: String, required: true },
    updatedAt: { type: String, default: null },
  },
  { collection: 'improvementBaseAgents', versionKey: false },
);
baseAgentSchema.index({ copyId: 1 });

const turnSchema = new mongoose.Schema(
  {
    _id: { type: String },
    branchKey: { type: String, required: true },
    seq: { type: Number, required: true },
    userMessage: { type: String, required: true },
    createdAt: { type: Date, required: true },
    ...outboxFields,
  },
  { collection: 'improvementTurns', versionKey: false, minimize: false },
);
turnSchema.index({ branchKey: 1, seq: 1 });

const turnResultSchema = new mongoose.Schema(
  {
    _id: { type: String },
    branchKey: { type: String, required: true },
    seq: { type: Number, required: true },
    status: { type: String, required: true },
    statusMessage: { type: String, default: null },
    assistantMessage: { type: String, default: null },
    edits: { type: String, required: true },
    finishedAt: { type: Date, required: true },
  },
  { collection: 'improvementTurnResults', versionKey: false },
);
turnResultSchema.index({ branchKey: 1, seq: 1 });

const decisionSchema = new mongoose.Schema(
  {
    _id: { type: String },
    tenantId: { type: String },
    projectId: { type: String },
    branchName: { type: String },
    decision: { type: String, required: true },
    resultSeq: { type: Number, default: null },
    agentIds: { type: [String], default: [] },
    at: { type: Date, required: true },
    completedAt: { type: Date, default: null },
  },
  { collection: 'improvementDecisions', versionKey: false },
);
decisionSchema.index({ decision: 1, completedAt: 1 });

const mergeStepSchema = new mongoose.Schema(
  {
    _id: { type: String },
    branchKey: { type: String, required: true },
    agentId: { type: String, required: true },
    outcome: { type: String, required: true },
    detail: { type: String, default: null },
    at: { type: Date, required: true },
  },
  { collection: 'improvementMergeSteps', versionKey: false },
);
mergeStepSchema.index({ branchKey: 1 });

const copilotRunSchema = scopedSchema(
  {
    conversationId: { type: String, required: true },
    status: { type: String, required: true },
    createdAt: { type: Date, required: true },
  },
  { collection: 'copilotRuns', timestamps: false },
);
copilotRunSchema.index({ tenantId: 1, projectId: 1, conversationId: 1 });

export type TurnStatus = 'completed' | 'failed' | 'not_configured';

export type BranchDoc = StoredDoc<typeof branchSchema>;
export type BaseAgentDoc = StoredDoc<typeof baseAgentSchema>;
// pendingEvents is a Mixed path (InferSchemaType types it as `any`).
export type TurnDoc = StoredDoc<typeof turnSchema, string, PendingEventsField>;
// status, decision and outcome are plain Strings the code only ever writes one of these values to.
export type TurnResultDoc = StoredDoc<typeof turnResultSchema, string, { status: TurnStatus }>;
export type DecisionDoc = StoredDoc<typeof decisionSchema, string, { decision: 'merged' | 'rejected' }>;
export type MergeStepDoc = StoredDoc<typeof mergeStepSchema, string, { outcome: 'applied' | 'skipped' }>;
export type CopilotRunDoc = StoredDoc<typeof copilotRunSchema>;

export interface ImprovementModels {
  Branches: Model<BranchDoc>;
  BaseAgents: Model<BaseAgentDoc>;
  Turns: Model<TurnDoc>;
  TurnResults: Model<TurnResultDoc>;
  Decisions: Model<DecisionDoc>;
  MergeSteps: Model<MergeStepDoc>;
  CopilotRuns: Model<CopilotRunDoc>;
}

export const improvementModels = (db: Connection): ImprovementModels => ({
  Branches: db.models.ImprovementBranch ?? db.model<BranchDoc>('ImprovementBranch', branchSchema),
  BaseAgents: db.models.ImprovementBaseAgent ?? db.model<BaseAgentDoc>('ImprovementBaseAgent', baseAgentSchema),
  Turns: db.models.ImprovementTurn ?? db.model<TurnDoc>('ImprovementTurn', turnSchema),
  TurnResults: db.models.ImprovementTurnResult ?? db.model<TurnResultDoc>('ImprovementTurnResult', turnResultSchema),
  Decisions: db.models.ImprovementDecision ?? db.model<DecisionDoc>('ImprovementDecision', decisionSchema),
  MergeSteps: db.models.ImprovementMergeStep ?? db.model<MergeStepDoc>('ImprovementMergeStep', mergeStepSchema),
  CopilotRuns: db.models.CopilotRun ?? db.model<CopilotRunDoc>('CopilotRun', copilotRunSchema),
});
