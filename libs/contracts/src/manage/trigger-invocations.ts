import { z } from 'zod';
import { operation } from '../operation';
import { getOperation, listOperation } from '../record-operations';
import { Rid, AgentPath, dataReply } from '../common';

/** What one check of a webhook call found: `passed`, `failed`, or `skipped` (the trigger does not configure it, or an earlier check failed). */
export const Verdict = z.enum(['passed', 'failed', 'skipped']);
export type Verdict = z.infer<typeof Verdict>;

export const TriggerInvocationVerdicts = z.object({
  authentication: Verdict.describe('The configured authentication headers'),
  signature: Verdict.describe('signatureVerification with the signing secret'),
  schema: Verdict.describe('The body against inputSchema'),
});
export type TriggerInvocationVerdicts = z.infer<typeof TriggerInvocationVerdicts>;

/** One run-as user's execution request: due at `dueAt` (spaced by dispatchDelayMs), `dispatched` once it is on JetStream. */
export const TriggerDispatch = z.object({
  userId: z
    .string()
    .nullable()
    .describe('The run-as user; null when the trigger names none (one request without a user)'),
  state: z.enum(['pending', 'dispatched']),
  eventId: z.string().describe('Id of its trigger.invoked event'),
  dueAt: z.string(),
  dispatchedAt: z.string().nullable(),
});
export type TriggerDispatch = z.infer<typeof TriggerDispatch>;

export const TriggerInvocation = z.object({
  id: z.string(),
  triggerId: z.string(),
  agentId: z.string(),
  status: z
    .enum(['rejected', 'pending', 'dispatched'])
    .describe(
      '`rejected`: a check failed (see `verdicts` and `error`), nothing was dispatched; `pending`: accepted, some requests not dispatched yet; `dispatched`: every request is on JetStream',
    ),
  verdicts: TriggerInvocationVerdicts,
  error: z
    .object({ status: z.number().int(), detail: z.string() })
    .nullable()
    .describe('Why it was rejected (the answer the caller got)'),
  deliveryId: z.string().nullable().describe("The provider's delivery id (the trigger's deliveryIdHeader)"),
  rerunOf: z.string().nullable().describe('The invocation this one reruns'),
  message: z.string().nullable().describe('The rendered messageTemplate'),
  input: z.unknown().describe('The input after outputTransform (null when rejected)'),
  bodyBytes: z.number().int().describe('Size of the received body'),
  dispatches: z.array(TriggerDispatch),
  receivedAt: z.string(),
  completedAt: z.string().nullable().describe('When the last request was dispatched'),
});
export type TriggerInvocation = z.infer<typeof TriggerInvocation>;

const tags = ['Trigger invocations'];
const base = '/manage/tenants/{tenantId}/projects/{projectId}/agents/{agentId}/triggers/{id}/invocations';
/** The problems an invocation operation answers. */
const invocationErrors = [400, 401, 403, 404, 422, 500];
export const TriggerInvocationsPath = AgentPath.extend({ id: Rid });
export const TriggerInvocationPath = TriggerInvocationsPath.extend({ invocationId: Rid });

export const listTriggerInvocations = listOperation({
  operationId: 'listTriggerInvocations',
  summary: 'List the invocations of a trigger, newest first (accepted and rejected webhook calls, reruns)',
  tags,
  path: base,
  service: 'management',
  subject: 'svc.management.trigger-invocations.list',
  auth: 'manage',
  permission: 'view',
  params: TriggerInvocationsPath,
  item: TriggerInvocation,
  errors: invocationErrors,
  addition: true,
});

export const getTriggerInvocation = getOperation({
  operationId: 'getTriggerInvocation',
  summary: "Get one invocation of a trigger: verdicts, rendered message, each user's dispatch state and timings",
  tags,
  path: `${base}/{invocationId}`,
  service: 'management',
  subject: 'svc.management.trigger-invocations.get',
  auth: 'manage',
  permission: 'view',
  params: TriggerInvocationPath,
  item: TriggerInvocation,
  errors: invocationErrors,
  addition: true,
});

export const rerunTriggerInvocation = operation({
  operationId: 'rerunTriggerInvocation',
  summary:
    "Run an accepted invocation again: a new invocation with the same input and message, dispatched to the trigger's current run-as users",
  tags,
  method: 'post',
  path: `${base}/{invocationId}/rerun`,
  service: 'management',
  subject: 'svc.management.trigger-invocations.rerun',
  auth: 'manage',
  permission: 'edit',
  params: TriggerInvocationPath,
  reply: { status: 202, body: dataReply(TriggerInvocation), description: 'Accepted: the new invocation' },
  errors: [400, 401, 403, 404, 409, 422, 500],
  addition: true,
});
