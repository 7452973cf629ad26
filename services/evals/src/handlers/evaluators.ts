import {
  createEvaluator,
  deleteEvaluator,
  getEvaluator,
  listEvaluators,
  paged,
  updateEvaluator,
} from '@platform/contracts';
import { reply, type ServiceBus } from '@platform/bus';
import {
  addEvaluator,
  changeEvaluator,
  findEvaluator,
  removeEvaluator,
  type EvaluatorDeps,
} from '../domain/evaluators';

export function registerEvaluatorHandlers(bus: ServiceBus, deps: EvaluatorDeps) {
  bus.handle(listEvaluators, async ({ params, query }) =>
    paged(query, await deps.evaluators.list(params, query.page, query.limit)),
  );
  bus.handle(createEvaluator, async ({ params, body }) => ({ data: await addEvaluator(deps, params, body) }));
  bus.handle(getEvaluator, async ({ params }) => ({ data: await findEvaluator(deps, params, params.id) }));
  bus.handle(updateEvaluator, async ({ params, body }) => ({
    data: await changeEvaluator(deps, params, params.id, body),
  }));
  bus.handle(deleteEvaluator, async ({ params }) => {
    await removeEvaluator(deps, params, params.id);
    return reply(204);
  });
}
