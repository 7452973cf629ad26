import {
  createAnalyticsKey,
  deleteAnalyticsKey,
  getAnalyticsKey,
  listAnalyticsKeys,
  paged,
  verifyAnalyticsKey as verifyAnalyticsKeyCall,
} from '@platform/contracts';
import { reply, type ServiceBus } from '@platform/bus';
import {
  findAnalyticsKey,
  issueAnalyticsKey,
  revokeAnalyticsKey,
  verifyAnalyticsKey,
  type AnalyticsKeyDeps,
} from '../domain/analytics-keys';

export function registerAnalyticsKeyHandlers(bus: ServiceBus, deps: AnalyticsKeyDeps) {
  bus.handle(createAnalyticsKey, async ({ params, body }) => ({ data: await issueAnalyticsKey(deps, params, body) }));
  bus.handle(listAnalyticsKeys, async ({ params, query }) =>
    paged(query, await deps.keys.list(params, { integrationId: query.integrationId }, query.page, query.limit)),
  );
  bus.handle(getAnalyticsKey, async ({ params }) => ({ data: await findAnalyticsKey(deps, params, params.id) }));
  bus.handle(deleteAnalyticsKey, async ({ params }) => {
    await revokeAnalyticsKey(deps, params, params.id);
    return reply(204);
  });
  bus.serveInternal(verifyAnalyticsKeyCall, async ({ key }) => ({ principal: await verifyAnalyticsKey(deps, key) }));
}
