import {
  createFeedback,
  createFeedbackBulk,
  deleteFeedback,
  getFeedback,
  getFeedbackByIds,
  listConversationFeedback,
  listFeedback,
  paged,
  updateFeedback,
} from '@platform/contracts';
import { reply, type ServiceBus } from '@platform/bus';
import {
  addFeedback,
  addFeedbackBulk,
  changeFeedback,
  findFeedback,
  findFeedbackByIds,
  listFeedbackPage,
  removeFeedback,
  type FeedbackDeps,
} from '../domain/feedback';

export function registerFeedbackHandlers(bus: ServiceBus, deps: FeedbackDeps) {
  bus.handle(listFeedback, async ({ params, query }) => paged(query, await listFeedbackPage(deps, params, query)));
  bus.handle(createFeedback, async ({ params, body }) => ({ data: await addFeedback(deps, params, body) }));
  bus.handle(createFeedbackBulk, async ({ params, body }) => addFeedbackBulk(deps, params, body));
  bus.handle(getFeedback, async ({ params }) => ({ data: await findFeedback(deps, params, params.id) }));
  bus.handle(updateFeedback, async ({ params, body }) => ({
    data: await changeFeedback(deps, params, params.id, body),
  }));
  bus.serveInternal(listConversationFeedback, async ({ tenantId, projectId, conversationId, limit }) => ({
    feedback: (await listFeedbackPage(deps, { tenantId, projectId }, { conversationId, page: 1, limit })).rows,
  }));
  bus.serveInternal(getFeedbackByIds, async ({ tenantId, projectId, ids }) => ({
    feedback: await findFeedbackByIds(deps, { tenantId, projectId }, ids),
  }));
  bus.handle(deleteFeedback, async ({ params }) => {
    await removeFeedback(deps, params, params.id);
    return reply(204);
  });
}
