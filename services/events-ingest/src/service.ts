import { defineService } from '@platform/runtime';
import { outboxRelay, type OutboxRelay } from '@platform/mongo';
import { eventsIngestConfig } from './config';
import { runEventRepo } from './data/run-event.repo';
import { registerRunEventHandlers } from './handlers/run-events';

export const eventsIngest = defineService({
  name: 'events-ingest',
  config: eventsIngestConfig,
  uses: { mongo: true },
  async start({ config, bus, pub, db }) {
    let relay: OutboxRelay | undefined;
    const events = runEventRepo(db!, () => relay!);
    relay = outboxRelay(events.model, pub, { intervalMs: config.OUTBOX_SWEEP_MS });
    await relay.sweep();
    registerRunEventHandlers(bus, { events });
    return {
      async stop() {
        await relay!.stop();
      },
    };
  },
});
