import { defineService } from '@platform/runtime';
import { outboxRelay } from '@platform/outbox';
import { eventsIngestConfig } from './config';
import { runEventModel } from './data/run-event.model';
import { runEventRepo } from './data/run-event.repo';
import { registerRunEventHandlers } from './handlers/run-events';

export const eventsIngest = defineService({
  name: 'events-ingest',
  config: eventsIngestConfig,
  uses: { mongo: true },
  async start({ config, bus, pub, db }) {
    const relay = outboxRelay(runEventModel(db), pub, { intervalMs: config.OUTBOX_SWEEP_MS });
    const events = runEventRepo(db, relay);
    await relay.sweep();
    registerRunEventHandlers(bus, { events });
    return {
      async stop() {
        await relay.stop();
      },
    };
  },
});
