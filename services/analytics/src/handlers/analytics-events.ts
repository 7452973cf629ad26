import { createAnalyticsEvent, createAnalyticsEventBatch, getAnalyticsCounts } from '@platform/contracts';
import { reply, type ServiceBus } from '@platform/bus';
import { recordAnalyticsEvent, recordAnalyticsEvents, type AnalyticsEventDeps } from '../domain/analytics-events';
import { countAnalyticsEvents } from '../domain/analytics-counts';

export function registerAnalyticsEventHandlers(bus: ServiceBus, deps: AnalyticsEventDeps) {
  bus.handle(createAnalyticsEvent, async ({ body }, ctx) => {
    const { created, event } = await recordAnalyticsEvent(deps, ctx.principal, body);
    return reply(created ? 201 : 200, event);
  });
  bus.handle(createAnalyticsEventBatch, async ({ body }, ctx) => {
    const stored = await recordAnalyticsEvents(deps, ctx.principal, body.events);
    return {
      data: stored.map(({ created, event }) => ({ status: created ? (201 as const) : (200 as const), data: event })),
    };
  });
  bus.handle(getAnalyticsCounts, async ({ params, query }) => ({
    data: await countAnalyticsEvents(deps, params, query),
  }));
}
