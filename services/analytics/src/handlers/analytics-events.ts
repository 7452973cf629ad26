import { createAnalyticsEvent, getAnalyticsCounts } from '@platform/contracts';
import { reply, type ServiceBus } from '@platform/bus';
import { recordAnalyticsEvent, type AnalyticsEventDeps } from '../domain/analytics-events';
import { countAnalyticsEvents } from '../domain/analytics-counts';

export function registerAnalyticsEventHandlers(bus: ServiceBus, deps: AnalyticsEventDeps) {
  bus.handle(createAnalyticsEvent, async ({ body }, ctx) => {
    const { created, event } = await recordAnalyticsEvent(deps, ctx.principal, body);
    return reply(created ? 201 : 200, event);
  });
  bus.handle(getAnalyticsCounts, async ({ params, query }) => ({ data: await countAnalyticsEvents(deps, params, query) }));
}
