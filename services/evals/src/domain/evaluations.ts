import {
  evalWorkSubject,
  evaluationFailed,
  pendingEvent,
  type EvalWorkItem,
  type Evaluator,
  type PendingEvent,
  type ProjectScope,
} from '@platform/contracts';
import { AppError } from '@platform/problems';
import { getLogger } from '@platform/logger';
import { randomId } from '@platform/secrets';
import type { EvaluationRepo } from '../data/evaluation.repo';
import type { EvaluatorRepo } from '../data/evaluator.repo';
import type { Platform } from '../clients/platform';
import type { Llm } from '../clients/llm';
import { judge, type ConversationData } from './judge';

const log = getLogger('evals.evaluations');

export interface EvaluationDeps {
  runs: EvaluationRepo;
  evaluators: EvaluatorRepo;
  platform: Platform;
  llm: Llm;
}

/** The agent a conversation belongs to: from its events, else from its feedback. */
function agentOf(data: ConversationData): string | null {
  return data.events.find((e) => e.agentId)?.agentId ?? data.feedback.find((f) => f.agentId)?.agentId ?? null;
}

async function conversationData(
  deps: EvaluationDeps,
  scope: ProjectScope,
  conversationId: string,
): Promise<ConversationData> {
  const [events, feedback] = await Promise.all([
    deps.platform.conversationEvents(scope, conversationId),
    deps.platform.conversationFeedback(scope, conversationId),
  ]);
  return { conversationId, events, feedback };
}

const known = (d: ConversationData) => d.events.length > 0 || d.feedback.length > 0;

function workItem(scope: ProjectScope, item: EvalWorkItem, id: string): PendingEvent {
  return {
    id,
    subject: evalWorkSubject(scope.tenantId),
    envelope: {
      id,
      type: 'evaluation.item',
      version: 1,
      tenantId: scope.tenantId,
      projectId: scope.projectId,
      occurredAt: new Date().toISOString(),
      data: item,
    },
  };
}

/** One insert holds the run and every (conversation × evaluator) work item; the outbox queues them once it is stored. */
async function queueRun(
  deps: EvaluationDeps,
  scope: ProjectScope,
  conversationIds: string[],
  evaluatorIds: string[],
): Promise<string> {
  const id = `run_${randomId(20)}`;
  const work: PendingEvent[] = [];
  for (const conversationId of conversationIds) {
    for (const evaluatorId of evaluatorIds) {
      work.push(
        workItem(scope, { ...scope, evaluationRunId: id, conversationId, evaluatorId }, `${id}_${work.length}`),
      );
    }
  }
  await deps.runs.insertRun(
    { id, ...scope, conversationIds, evaluatorIds, totalItems: work.length, createdAt: new Date() },
    work,
  );
  return id;
}

/** POST /evals/.../evaluate-conversation: every evaluator that applies to the conversation's agent, as one run. */
export async function evaluateOneConversation(deps: EvaluationDeps, scope: ProjectScope, conversationId: string) {
  const data = await conversationData(deps, scope, conversationId);
  if (!known(data)) throw new AppError('not_found', `Conversation "${conversationId}" not found`);
  const agentId = agentOf(data);
  const applicable = (await deps.evaluators.all(scope)).filter(
    (e) => !e.agentIds.length || (agentId !== null && e.agentIds.includes(agentId)),
  );
  if (!applicable.length) {
    return {
      evaluationsTriggered: 0,
      success: true,
      message: `No evaluator applies to conversation ${conversationId}`,
      evaluationRunId: null,
    };
  }
  const runId = await queueRun(
    deps,
    scope,
    [conversationId],
    applicable.map((e) => e.id),
  );
  return {
    evaluationsTriggered: applicable.length,
    success: true,
    message: `Triggered ${applicable.length} evaluation${applicable.length === 1 ? '' : 's'} for conversation ${conversationId} (run ${runId})`,
    evaluationRunId: runId,
  };
}

/** POST /evals/.../evaluate-conversations: a run over the given conversations × evaluators (all must exist). */
export async function evaluateConversations(
  deps: EvaluationDeps,
  scope: ProjectScope,
  conversationIdsIn: string[],
  evaluatorIdsIn: string[],
) {
  const conversationIds = [...new Set(conversationIdsIn)];
  const evaluatorIds = [...new Set(evaluatorIdsIn)];
  const found = new Set((await deps.evaluators.findMany(scope, evaluatorIds)).map((e) => e.id));
  const missingEvaluators = evaluatorIds.filter((id) => !found.has(id));
  if (missingEvaluators.length)
    throw new AppError('not_found', `Evaluators not found: ${missingEvaluators.join(', ')}`);
  const missingConversations: string[] = [];
  // Checked a few at a time: each check is one or two requests to other services.
  for (let i = 0; i < conversationIds.length; i += 16) {
    const batch = conversationIds.slice(i, i + 16);
    const exists = await Promise.all(
      batch.map(async (conversationId) => {
        if ((await deps.platform.conversationEvents(scope, conversationId)).length) return true;
        return (await deps.platform.conversationFeedback(scope, conversationId)).length > 0;
      }),
    );
    missingConversations.push(...batch.filter((_id, j) => !exists[j]));
  }
  if (missingConversations.length)
    throw new AppError('not_found', `Conversations not found: ${missingConversations.join(', ')}`);
  const evaluationRunId = await queueRun(deps, scope, conversationIds, evaluatorIds);
  return {
    conversationIds,
    evaluatorIds,
    evaluationRunId,
    message: `Evaluation run ${evaluationRunId} queued: ${conversationIds.length} conversation(s) × ${evaluatorIds.length} evaluator(s)`,
  };
}

/**
 * Works one queued item: evaluates and stores the result once (the result's key is the item, so a redelivery after a
 * crash stores nothing new and emits nothing new). Transient failures (a service or the database not answering)
 * throw, so the message is redelivered; problems of the item itself become an `error` result.
 */
export async function evaluateItem(deps: EvaluationDeps, item: EvalWorkItem): Promise<void> {
  const scope = { tenantId: item.tenantId, projectId: item.projectId };
  if (await deps.runs.resultExists(scope, item.evaluationRunId, item.conversationId, item.evaluatorId)) return;
  await deps.runs.markStarted(scope, item.evaluationRunId);
  const evaluator = await deps.evaluators.findById(scope, item.evaluatorId);
  const data = await conversationData(deps, scope, item.conversationId);
  const judgement = evaluator
    ? await judge(evaluator, data, deps.llm)
    : {
        status: 'error' as const,
        verdict: null,
        output: null,
        failedConditions: [],
        error: `evaluator "${item.evaluatorId}" was deleted`,
      };
  const resultId = randomId(20);
  const events =
    judgement.verdict === 'failed' && evaluator
      ? [failedEvent(scope, evaluator, data, judgement.failedConditions, item.evaluationRunId, resultId)]
      : [];
  const stored = await deps.runs.insertResult(
    {
      id: resultId,
      ...scope,
      evaluationRunId: item.evaluationRunId,
      conversationId: item.conversationId,
      evaluatorId: item.evaluatorId,
      status: judgement.status,
      verdict: judgement.verdict,
      output: judgement.output === null || judgement.output === undefined ? null : JSON.stringify(judgement.output),
      failedConditions: JSON.stringify(judgement.failedConditions),
      error: judgement.error,
      createdAt: new Date(),
    },
    events,
  );
  if (!stored) log.info({ item }, 'item already had a result (redelivery); nothing stored');
}

function failedEvent(
  scope: ProjectScope,
  evaluator: Evaluator,
  data: ConversationData,
  failedConditions: unknown[],
  evaluationRunId: string,
  resultId: string,
) {
  const latest = [...data.events].reverse();
  return pendingEvent(evaluationFailed, randomId(24), scope, {
    evaluator: { id: evaluator.id, name: evaluator.name },
    conversation: {
      id: data.conversationId,
      agentId: agentOf(data),
      userProperties: latest.find((e) => e.userProperties)?.userProperties ?? null,
      properties: latest.find((e) => e.properties)?.properties ?? null,
    },
    failedConditions,
    evaluationRunId,
    resultId,
  });
}
