import { createRunEvent } from '@platform/contracts';
import { reply, type ServiceBus } from '@platform/bus';
import { recordRunEvent, type RunEventDeps } from '../domain/run-events';

export function registerRunEventHandlers(bus: ServiceBus, deps: RunEventDeps) {
  bus.handle(createRunEvent, async ({ body }, ctx) => {
    const { created, event } = await recordRunEvent(deps, ctx.principal, body);
    return reply(created ? 201 : 200, { data: event });
  });
}
