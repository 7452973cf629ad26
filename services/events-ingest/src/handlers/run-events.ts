import { createRunEvent, listConversationEvents } from '@platform/contracts';
import { reply, type ServiceBus } from '@platform/bus';
import { counter } from '@platform/telemetry';
import { recordRunEvent, type RunEventDeps } from '../domain/run-events';

/** `events_ingested_total{result}`: created (a new event) or duplicate (an id seen before, answered 200). */
const ingested = () => counter('events_ingested_total', 'Run events accepted by events-ingest, by result', ['result']);

export function registerRunEventHandlers(bus: ServiceBus, deps: RunEventDeps) {
  bus.handle(createRunEvent, async ({ body }, ctx) => {
    const { created, event } = await recordRunEvent(deps, ctx.principal, body);
    ingested().inc({ result: created ? 'created' : 'duplicate' });
    return reply(created ? 201 : 200, { data: event });
  });

  /** Internal (evals): the recorded events of one conversation. */
  bus.serveInternal(listConversationEvents, async ({ limit, conversationId, ...scope }) => ({
    events: await deps.events.ofConversation(scope, conversationId, limit),
  }));
}
