import { z } from 'zod';
import { operation } from '../operation';
import { Rid, ProjectPath } from '../common';
import { text } from '../text';

/**
 * Improvement (branch) statuses:
 * - `running`: the latest message is queued for the assistant or being answered by an evals worker;
 * - `completed`: the assistant answered the latest message (its edits, if any, are on the branch);
 * - `failed`: the assistant could not answer (endpoint error, or an edit that would not apply);
 * - `not_configured`: no assistant endpoint is configured; messages are recorded, no edits are made;
 * - `merging`: the merge was decided and its agents are being written (a retry of merge, or the evals sweep, finishes it);
 * - `merged`, `rejected`: final.
 */
export const ImprovementStatus = z.enum([
  'running',
  'completed',
  'failed',
  'not_configured',
  'merging',
  'merged',
  'rejected',
]);
export type ImprovementStatus = z.infer<typeof ImprovementStatus>;

/** `improvement_<agentId>_<ISO time with : and . replaced by ->`. */
export const BranchName = z
  .string()
  .min(1)
  .max(400)
  .regex(/^improvement_[A-Za-z0-9_.-]+$/, 'must be an improvement branch name (improvement_…)');
export const BranchPath = ProjectPath.extend({ branchName: BranchName });

export const ImprovementListItem = z.object({
  branchName: z.string(),
  status: ImprovementStatus,
  updatedAt: z.string(),
  agentId: z
    .string()
    .describe('Addition: the agent the feedback concerns (the branch holds a copy of every agent of the project)'),
});

export const FeedbackItem = z.object({
  createdAt: z.string(),
  details: z.string().nullable(),
  id: z.string(),
  type: z.enum(['positive', 'negative']),
});

export const ImprovementMessage = z.object({
  role: z.enum(['user', 'assistant']),
  content: z.string(),
  createdAt: z.string(),
});

export const ImprovementConversation = z.object({
  conversationIds: z.array(z.string()),
  feedbackItems: z.array(FeedbackItem),
  status: ImprovementStatus,
  statusMessage: z
    .string()
    .nullable()
    .describe('Addition: why the status is what it is (for example "the improvement assistant is not configured")'),
  messages: z.array(ImprovementMessage).describe('Addition: the branch conversation, oldest first'),
});

/** One RFC 6902 operation. */
export const JsonPatchOperation = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('add'), path: z.string(), value: z.unknown() }),
  z.strictObject({ op: z.literal('remove'), path: z.string() }),
  z.strictObject({ op: z.literal('replace'), path: z.string(), value: z.unknown() }),
  z.strictObject({ op: z.literal('move'), from: z.string(), path: z.string() }),
  z.strictObject({ op: z.literal('copy'), from: z.string(), path: z.string() }),
  z.strictObject({ op: z.literal('test'), path: z.string(), value: z.unknown() }),
]);
export type JsonPatchOperation = z.infer<typeof JsonPatchOperation>;

export const ImprovementDiff = z.object({
  branchName: z.string(),
  targetBranch: z.literal('main').describe('The live definitions'),
  agentId: z.string().describe('The agent the feedback concerns'),
  agentIds: z.array(z.string()).describe('Addition: the agents the branch changed (the ones a merge writes), sorted'),
  format: z
    .literal('json-patch')
    .describe(
      '`patch` is an RFC 6902 JSON Patch over the document `{"agents": {"<agentId>": <definition>}}` holding the live definitions of the changed agents; applied to it, it gives the branch\'s. Paths start with `/agents/<agentId>/`.',
    ),
  hasChanges: z.boolean(),
  patch: z.array(JsonPatchOperation),
  liveMissing: z
    .boolean()
    .describe(
      'true when a changed agent no longer exists live (its part of the patch is then an `add` of the whole definition)',
    ),
});

const tags = ['Improvements'];
const base = '/manage/tenants/{tenantId}/projects/{projectId}/improvements';
/** The problems an operation on a branch answers (a write to the project also 409, see `operation()`). */
const branchErrors = [400, 401, 403, 404, 500];

export const listImprovements = operation({
  operationId: 'listImprovements',
  summary: 'List improvement branches, most recently changed first',
  tags,
  method: 'get',
  path: base,
  service: 'evals',
  subject: 'svc.evals.improvements.list',
  auth: 'manage',
  permission: 'view',
  params: ProjectPath,
  reply: { status: 200, body: z.object({ data: z.array(ImprovementListItem) }) },
  errors: [400, 401, 403, 500],
});

export const createCopilotRun = operation({
  operationId: 'createCopilotRun',
  summary: 'Record a copilot conversation',
  tags,
  method: 'post',
  path: `${base}/copilot-runs`,
  service: 'evals',
  subject: 'svc.evals.improvements.copilot-runs',
  auth: 'manage',
  permission: 'edit',
  params: ProjectPath,
  body: z.strictObject({ conversationId: Rid.describe('The conversation id from the copilot chat') }),
  reply: { status: 201, body: z.object({ conversationId: z.string(), id: z.string() }) },
  errors: [400, 401, 403, 500],
});

export const triggerImprovement = operation({
  operationId: 'triggerImprovement',
  summary: 'Start an improvement branch from feedback',
  description:
    'Copies the live definitions of every agent of the project onto a new branch and queues the first message for the improvement assistant (the reply comes at once; the status is `running` until a worker has answered). 404 naming unknown feedback ids; 422 when the feedback names no agent, several agents, or an agent that does not exist.',
  tags,
  method: 'post',
  path: `${base}/trigger`,
  service: 'evals',
  subject: 'svc.evals.improvements.trigger',
  auth: 'manage',
  permission: 'edit',
  params: ProjectPath,
  body: z.strictObject({
    feedbackIds: z.array(Rid).min(1).max(100),
    additionalContext: text({ max: 20_000 }).optional(),
  }),
  reply: { status: 201, body: z.object({ branchName: z.string(), conversationId: z.string() }) },
  errors: [400, 401, 403, 404, 422, 500],
});

export const continueImprovement = operation({
  operationId: 'continueImprovement',
  summary: 'Send the improvement assistant another message on a branch',
  description:
    'Queues the message for the assistant and answers at once (status `running` until a worker has answered). 409 when the branch is merged or rejected, or when the assistant is still working on the previous message.',
  tags,
  method: 'post',
  path: `${base}/{branchName}/continue`,
  service: 'evals',
  subject: 'svc.evals.improvements.continue',
  auth: 'manage',
  permission: 'edit',
  params: BranchPath,
  body: z.strictObject({ message: text({ min: 1, max: 20_000 }) }),
  reply: { status: 200, body: z.object({ conversationId: z.string() }) },
  errors: branchErrors,
});

export const getImprovementConversation = operation({
  operationId: 'getImprovementConversation',
  summary: 'Status, feedback and conversation of a branch',
  tags,
  method: 'get',
  path: `${base}/{branchName}/conversation`,
  service: 'evals',
  subject: 'svc.evals.improvements.conversation',
  auth: 'manage',
  permission: 'view',
  params: BranchPath,
  reply: { status: 200, body: ImprovementConversation },
  errors: branchErrors,
});

export const getImprovementDiff = operation({
  operationId: 'getImprovementDiff',
  summary: "The branch's changes against the live definition (JSON Patch)",
  tags,
  method: 'get',
  path: `${base}/{branchName}/diff`,
  service: 'evals',
  subject: 'svc.evals.improvements.diff',
  auth: 'manage',
  permission: 'view',
  params: BranchPath,
  reply: { status: 200, body: ImprovementDiff },
  errors: branchErrors,
});

export const mergeImprovement = operation({
  operationId: 'mergeImprovement',
  summary: 'Apply the branch to the live definitions (addition)',
  description:
    "Writes every agent the branch changed (through management, which emits `agent.updated` for each). 409 when the branch is not open (merged, rejected, or the assistant is still working) or when a changed agent's live definition changed since the branch was made; 422 when a changed definition is no longer valid for the project; nothing is written then. A merge interrupted after its decision (status `merging`) is finished by calling merge again, or by the evals sweep.",
  tags,
  method: 'post',
  path: `${base}/{branchName}/merge`,
  service: 'evals',
  subject: 'svc.evals.improvements.merge',
  auth: 'manage',
  permission: 'edit',
  params: BranchPath,
  reply: { status: 200, body: z.object({ branchName: z.string(), status: z.literal('merged') }) },
  errors: [400, 401, 403, 404, 409, 422, 500],
  addition: true,
});

export const rejectImprovement = operation({
  operationId: 'rejectImprovement',
  summary: 'Close the branch without applying it (addition)',
  description: '409 when the branch is already merged or rejected, or the assistant is still working.',
  tags,
  method: 'post',
  path: `${base}/{branchName}/reject`,
  service: 'evals',
  subject: 'svc.evals.improvements.reject',
  auth: 'manage',
  permission: 'edit',
  params: BranchPath,
  reply: { status: 200, body: z.object({ branchName: z.string(), status: z.literal('rejected') }) },
  errors: branchErrors,
  addition: true,
});
