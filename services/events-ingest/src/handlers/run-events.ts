import { createRunEvent, LIST_CONVERSATION_EVENTS_SUBJECT, ListConversationEventsRequest } from '@platform/contracts';
import { validationError } from '@platform/problems';
import { reply, type ServiceBus } from '@platform/bus';
import { recordRunEvent, type RunEventDeps } from '../domain/run-events';

export function registerRunEventHandlers(bus: ServiceBus, deps: RunEventDeps) {
  bus.handle(createRunEvent, async ({ body }, ctx) => {
    const { created, event } = await recordRunEvent(deps, ctx.principal, body);
    return reply(created ? 201 : 200, { data: event });
  });

  /** Internal (evals): the recorded events of one conversation. */
  bus.serve(LIST_CONVERSATION_EVENTS_SUBJECT, async (wire) => {
    const r = ListConversationEventsRequest.safeParse(wire.body);
    if (!r.success) throw validationError(r.error, 'body');
    const { limit, conversationId, ...scope } = r.data;
    return { ok: true, status: 200, body: { events: await deps.events.ofConversation(scope, conversationId, limit) } };
  });
}
