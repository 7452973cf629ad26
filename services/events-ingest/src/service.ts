import { defineService } from '@platform/runtime';
import { publishNotice, startErasureWorker, subscribeNotice } from '@platform/bus';
import { runEventsErased } from '@platform/contracts';
import { eraseProjectDocuments } from '@platform/mongo';
import { eventsIngestConfig } from './config';
import { runEventRepo } from './data/run-event.repo';
import { registerRunEventHandlers } from './handlers/run-events';
import { runEventEvents } from './domain/run-events';

export const eventsIngest = defineService({
  name: 'events-ingest',
  config: eventsIngestConfig,
  async start({ bus, db, outbox, nc }) {
    const events = runEventRepo(db, outbox, runEventEvents);
    registerRunEventHandlers(bus, { events });
    // The spec's rule: deleting a conversation removes the events with that conversationId (not those anchored by a
    // messageId only). A removed event's id is free again: posting it once more creates a new event (201).
    // Every replica remembers recent ids (a replay answers 200 without a read): each forgets the erased ones.
    const forgetting = subscribeNotice(nc, runEventsErased, 'events-ingest', (e) => events.forget(e, e.conversationId));
    const erased = (scope: { tenantId: string; projectId: string }, conversationId: string | null) => {
      events.forget(scope, conversationId);
      publishNotice(nc, runEventsErased, { ...scope, conversationId });
    };
    const erasure = await startErasureWorker(nc, bus, 'events-ingest', {
      eraseProject: async (scope) => {
        await eraseProjectDocuments(db, scope);
        erased(scope, null);
      },
      eraseConversation: async (scope, conversationId) => {
        await events.model.deleteMany({ ...scope, conversationId });
        erased(scope, conversationId);
      },
    });
    return {
      async stop() {
        await erasure.stop();
        forgetting.unsubscribe();
      },
    };
  },
});
