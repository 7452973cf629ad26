import { mongoose, type Connection, type Model } from '@platform/mongo';

/**
 * An improvement branch is three insert-only collections, so no document has two writers:
 * - `improvementBranches`: the branch as created (never changed): the feedback, the agent copied and the live
 *   definition it was copied from (`baseDefinition`, `baseUpdatedAt`);
 * - `improvementTurns`: one document per message (`_id` `<branch key>#<seq>`: the unique key serializes messages);
 *   written by the request that sent the message and finished by that same request;
 * - `improvementDecisions`: at most one per branch (`_id` = branch key): merged or rejected.
 * Definitions are JSON text.
 */
const branchSchema = new mongoose.Schema(
  {
    _id: { type: String },
    branchName: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    agentId: { type: String, required: true },
    conversationId: { type: String, required: true },
    feedbackItems: { type: String, required: true },
    additionalContext: { type: String, default: null },
    baseDefinition: { type: String, required: true },
    baseUpdatedAt: { type: String, default: null },
    createdAt: { type: Date, required: true },
  },
  { collection: 'improvementBranches', versionKey: false },
);
branchSchema.index({ tenantId: 1, projectId: 1, createdAt: -1 });

const turnSchema = new mongoose.Schema(
  {
    _id: { type: String },
    branchKey: { type: String, required: true },
    seq: { type: Number, required: true },
    userMessage: { type: String, required: true },
    status: { type: String, required: true },
    statusMessage: { type: String, default: null },
    assistantMessage: { type: String, default: null },
    definition: { type: String, required: true },
    createdAt: { type: Date, required: true },
    finishedAt: { type: Date, default: null },
  },
  { collection: 'improvementTurns', versionKey: false },
);
turnSchema.index({ branchKey: 1, seq: 1 });

const decisionSchema = new mongoose.Schema(
  { _id: { type: String }, decision: { type: String, required: true }, at: { type: Date, required: true } },
  { collection: 'improvementDecisions', versionKey: false },
);

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
  Turns: (db.models.ImprovementTurn ?? db.model('ImprovementTurn', turnSchema)) as Model<any>,
  Decisions: (db.models.ImprovementDecision ?? db.model('ImprovementDecision', decisionSchema)) as Model<any>,
  CopilotRuns: (db.models.CopilotRun ?? db.model('CopilotRun', copilotRunSchema)) as Model<any>,
});

export interface BranchDoc {
  _id: string;
  branchName: string;
  tenantId: string;
  projectId: string;
  agentId: string;
  conversationId: string;
  feedbackItems: string;
  additionalContext: string | null;
  baseDefinition: string;
  baseUpdatedAt: string | null;
  createdAt: Date;
}

export type TurnStatus = 'running' | 'completed' | 'failed' | 'not_configured';

export interface TurnDoc {
  _id: string;
  branchKey: string;
  seq: number;
  userMessage: string;
  status: TurnStatus;
  statusMessage: string | null;
  assistantMessage: string | null;
  definition: string;
  createdAt: Date;
  finishedAt: Date | null;
}

export interface DecisionDoc {
  _id: string;
  decision: 'merged' | 'rejected';
  at: Date;
}
