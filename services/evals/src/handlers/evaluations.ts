import {
  evaluateConversation,
  evaluateConversations,
  getEvaluationRun,
  listEvaluationResults,
  listEvaluationRuns,
  paged,
} from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';
import { AppError } from '@platform/problems';
import {
  evaluateConversations as runConversations,
  evaluateOneConversation,
  type EvaluationDeps,
} from '../domain/evaluations';

const runNotFound = (id: string) => new AppError('not_found', `Evaluation run "${id}" not found`);

export function registerEvaluationHandlers(bus: ServiceBus, deps: EvaluationDeps) {
  bus.handle(evaluateConversation, async ({ params, body }) =>
    evaluateOneConversation(deps, params, body.conversationId),
  );
  bus.handle(evaluateConversations, async ({ params, body }) =>
    runConversations(deps, params, body.conversationIds, body.evaluatorIds),
  );
  bus.handle(listEvaluationRuns, async ({ params, query }) =>
    paged(query, await deps.runs.listRuns(params, query.page, query.limit)),
  );
  bus.handle(getEvaluationRun, async ({ params }) => {
    const run = await deps.runs.findRun(params, params.evaluationRunId);
    if (!run) throw runNotFound(params.evaluationRunId);
    return { data: run };
  });
  bus.handle(listEvaluationResults, async ({ params, query }) => {
    if (!(await deps.runs.runExists(params, params.evaluationRunId))) throw runNotFound(params.evaluationRunId);
    return paged(query, await deps.runs.listResults(params, params.evaluationRunId, query.page, query.limit));
  });
}
