import { mongoose, type Connection, type Model } from '@platform/mongo';
import { outboxFields } from '@platform/outbox';

/**
 * An improvement branch is a set of insert-only collections, so no document has two writers (the Mongo-wire server
 * we run on loses one of two concurrent updates of a document):
 * - `improvementBranches`: the branch as created (never changed): the feedback, the focus agent and the ids of every
 *   agent copied (`agentIds`, `copyId`);
 * - `improvementBaseAgents`: the copy, one document per agent (`_id` `<copyId>#<agentId>`): the live definition
 *   (JSON text, without timestamps) and the `updatedAt` it had, so one large project never makes one large document;
 * - `improvementTurns`: one document per message (`_id` `<branch key>#<seq>`: the unique key serializes messages),
 *   inserted with its work item in the outbox (the relay publishes it to the EVAL_WORK queue and clears it);
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

const copilotRunSchema = new mongoose.Schema(
  {
    _id: { type: String },
    id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    conversationId: { type: String, required: true },
    status: { type: String, required: true },
    createdAt: { type: Date, required: true },
  },
  { collection: 'copilotRuns', versionKey: false },
);
copilotRunSchema.index({ tenantId: 1, projectId: 1, conversationId: 1 });

export const improvementModels = (db: Connection) => ({
  Branches: (db.models.ImprovementBranch ?? db.model('ImprovementBranch', branchSchema)) as Model<any>,
  BaseAgents: (db.models.ImprovementBaseAgent ?? db.model('ImprovementBaseAgent', baseAgentSchema)) as Model<any>,
  Turns: (db.models.ImprovementTurn ?? db.model('ImprovementTurn', turnSchema)) as Model<any>,
  TurnResults: (db.models.ImprovementTurnResult ?? db.model('ImprovementTurnResult', turnResultSchema)) as Model<any>,
  Decisions: (db.models.ImprovementDecision ?? db.model('ImprovementDecision', decisionSchema)) as Model<any>,
  MergeSteps: (db.models.ImprovementMergeStep ?? db.model('ImprovementMergeStep', mergeStepSchema)) as Model<any>,
  CopilotRuns: (db.models.CopilotRun ?? db.model('CopilotRun', copilotRunSchema)) as Model<any>,
});

export interface BranchDoc {
  _id: string;
  branchName: string;
  tenantId: string;
  projectId: string;
  agentId: string;
  agentIds: string[];
  copyId: string;
  conversationId: string;
  feedbackItems: string;
  additionalContext: string | null;
  createdAt: Date;
}

export interface BaseAgentDoc {
  _id: string;
  copyId: string;
  agentId: string;
  definition: string;
  updatedAt: string | null;
}

export interface TurnDoc {
  _id: string;
  branchKey: string;
  seq: number;
  userMessage: string;
  createdAt: Date;
}

export type TurnStatus = 'completed' | 'failed' | 'not_configured';

export interface TurnResultDoc {
  _id: string;
  branchKey: string;
  seq: number;
  status: TurnStatus;
  statusMessage: string | null;
  assistantMessage: string | null;
  edits: string;
  finishedAt: Date;
}

export interface DecisionDoc {
  _id: string;
  tenantId: string;
  projectId: string;
  branchName: string;
  decision: 'merged' | 'rejected';
  resultSeq: number | null;
  agentIds: string[];
  at: Date;
  completedAt: Date | null;
}

export interface MergeStepDoc {
  _id: string;
  branchKey: string;
  agentId: string;
  outcome: 'applied' | 'skipped';
  detail: string | null;
  at: Date;
}
