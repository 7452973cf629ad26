import { z } from 'zod';
import { operation } from '../operation';
import { getOperation, listOperation } from '../record-operations';
import { Rid, ProjectPath } from '../common';

export const EvaluateConversationBody = z.strictObject({ conversationId: Rid });
export const EvaluateConversationReply = z.object({
  evaluationsTriggered: z.number().int(),
  message: z.string(),
  success: z.boolean(),
  evaluationRunId: z
    .string()
    .nullable()
    .describe('Addition: the run holding the triggered evaluations (null when none applied)'),
});

export const EVALUATION_RUN_MAX_ITEMS = 1000;

export const EvaluateConversationsBody = z
  .strictObject({
    conversationIds: z.array(Rid).min(1).max(500),
    evaluatorIds: z.array(Rid).min(1).max(100),
  })
  .refine((b) => new Set(b.conversationIds).size * new Set(b.evaluatorIds).size <= EVALUATION_RUN_MAX_ITEMS, {
    message: `at most ${EVALUATION_RUN_MAX_ITEMS} conversation × evaluator pairs per run`,
    path: ['conversationIds'],
  });
export const EvaluateConversationsReply = z.object({
  conversationIds: z.array(z.string()),
  evaluationRunId: z.string(),
  evaluatorIds: z.array(z.string()),
  message: z.string(),
});

export const EvaluationRunStatus = z.enum(['queued', 'running', 'completed', 'failed']);
export type EvaluationRunStatus = z.infer<typeof EvaluationRunStatus>;

export const EvaluationRun = z.object({
  id: z.string(),
  status: EvaluationRunStatus,
  conversationIds: z.array(z.string()),
  evaluatorIds: z.array(z.string()),
  totalItems: z.number().int(),
  completedItems: z.number().int().describe('Items with a stored result (any verdict or error)'),
  passedItems: z.number().int(),
  failedItems: z.number().int().describe('Items whose verdict is `failed`'),
  errorItems: z.number().int().describe('Items that could not be evaluated (status `error`)'),
  createdAt: z.string(),
  startedAt: z.string().nullable(),
  completedAt: z.string().nullable(),
});
export type EvaluationRun = z.infer<typeof EvaluationRun>;

export const FailedCondition = z.object({
  field: z.string(),
  operator: z.string(),
  value: z.unknown(),
  actual: z.unknown(),
});
export type FailedCondition = z.infer<typeof FailedCondition>;

export const EvaluationResult = z.object({
  id: z.string(),
  evaluationRunId: z.string(),
  conversationId: z.string(),
  evaluatorId: z.string(),
  status: z.enum(['completed', 'error']),
  verdict: z.enum(['passed', 'failed', 'no_criteria']).nullable().describe('null when status is `error`'),
  output: z.unknown().describe("What the evaluator produced (the judge's JSON output, or the rule's findings)"),
  failedConditions: z.array(FailedCondition),
  error: z.string().nullable(),
  createdAt: z.string(),
});
export type EvaluationResult = z.infer<typeof EvaluationResult>;

export const RunPath = ProjectPath.extend({ evaluationRunId: Rid });

const tags = ['Evaluations'];
/** The problems an evaluation operation answers. */
const evaluationErrors = [400, 401, 403, 404, 500];
const evalsBase = '/evals/tenants/{tenantId}/projects/{projectId}';
const runsBase = '/manage/tenants/{tenantId}/projects/{projectId}/evals/evaluation-runs';

export const evaluateConversation = operation({
  operationId: 'evaluateConversation',
  summary: 'Evaluate a conversation with every evaluator that applies to its agent',
  description:
    "Queues one evaluation run over the evaluators whose `agentIds` include the conversation's agent (or are empty). 404 when the platform has no events and no feedback for the conversation.",
  tags,
  method: 'post',
  path: `${evalsBase}/evaluate-conversation`,
  service: 'evals',
  subject: 'svc.evals.evaluations.conversation',
  auth: 'manage',
  permission: 'edit',
  params: ProjectPath,
  body: EvaluateConversationBody,
  reply: { status: 200, body: EvaluateConversationReply },
  errors: evaluationErrors,
});

export const evaluateConversations = operation({
  operationId: 'evaluateConversations',
  summary: 'Start an evaluation run over conversations × evaluators',
  description:
    '202: the run is queued and executes in the background; read it with getEvaluationRun. 404 naming the unknown conversation or evaluator ids.',
  tags,
  method: 'post',
  path: `${evalsBase}/evaluate-conversations`,
  service: 'evals',
  subject: 'svc.evals.evaluations.conversations',
  auth: 'manage',
  permission: 'edit',
  params: ProjectPath,
  body: EvaluateConversationsBody,
  reply: { status: 202, body: EvaluateConversationsReply },
  errors: evaluationErrors,
});

export const listEvaluationRuns = listOperation({
  operationId: 'listEvaluationRuns',
  summary: 'List evaluation runs, newest first (addition)',
  tags,
  path: runsBase,
  service: 'evals',
  subject: 'svc.evals.evaluation-runs.list',
  auth: 'manage',
  permission: 'view',
  params: ProjectPath,
  item: EvaluationRun,
  errors: [400, 401, 403, 500],
  addition: true,
});

export const getEvaluationRun = getOperation({
  operationId: 'getEvaluationRun',
  summary: 'Get an evaluation run with its progress (addition)',
  tags,
  path: `${runsBase}/{evaluationRunId}`,
  service: 'evals',
  subject: 'svc.evals.evaluation-runs.get',
  auth: 'manage',
  permission: 'view',
  params: RunPath,
  item: EvaluationRun,
  errors: evaluationErrors,
  addition: true,
});

export const listEvaluationResults = listOperation({
  operationId: 'listEvaluationResults',
  summary: 'List the per-item results of an evaluation run (addition)',
  tags,
  path: `${runsBase}/{evaluationRunId}/results`,
  service: 'evals',
  subject: 'svc.evals.evaluation-runs.results',
  auth: 'manage',
  permission: 'view',
  params: RunPath,
  item: EvaluationResult,
  errors: evaluationErrors,
  addition: true,
});

/** A message of the evals work queue (the EVAL_WORK stream, declared in internal/streams.ts): one evaluation item. */
export const EvalWorkItem = z.object({
  tenantId: z.string(),
  projectId: z.string(),
  evaluationRunId: z.string(),
  conversationId: z.string(),
  evaluatorId: z.string(),
});
export type EvalWorkItem = z.infer<typeof EvalWorkItem>;
/** Envelope `type` of an evaluation item on the work queue. */
export const EVAL_WORK_ITEM_TYPE = 'evaluation.item';
/**
 * Envelope `type` of an improvement assistant turn on the same work queue (subject `work.evals.items.<tenant>`):
 * the worker answers message `seq` of the branch and stores the answer once.
 */
export const IMPROVEMENT_TURN_WORK_TYPE = 'improvement.turn';
export const ImprovementTurnWork = z.object({
  tenantId: z.string(),
  projectId: z.string(),
  branchName: z.string(),
  seq: z.number().int().min(1),
});
export type ImprovementTurnWork = z.infer<typeof ImprovementTurnWork>;
