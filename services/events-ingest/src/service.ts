import { defineService, instanceId } from '@platform/runtime';
import { getLogger } from '@platform/logger';
import { outboxRelay } from '@platform/outbox';
import { eventsIngestConfig } from './config';
import { runEventRepo } from './data/run-event.repo';
import { registerRunEventHandlers } from './handlers/run-events';
import { runEventEvents } from './domain/run-events';

const log = getLogger('events-ingest');

export const eventsIngest = defineService({
  name: 'events-ingest',
  config: eventsIngestConfig,
  uses: { mongo: true },
  async start({ config, bus, pub, db }) {
    const events = runEventRepo(db, { publisher: pub, instance: instanceId, eventsOf: runEventEvents });
    // Rows written by versions that cleared an outbox flag per event are relayed the old way (a query that finds none
    // once they are gone).
    const legacy = outboxRelay(events.model, pub, { intervalMs: config.OUTBOX_SWEEP_MS });
    await legacy.sweep();
    await events.sweep();
    const sweeper = setInterval(() => {
      events.sweep().catch((err: unknown) => log.warn({ err }, 'outbox sweep failed'));
    }, config.OUTBOX_SWEEP_MS);
    sweeper.unref();
    registerRunEventHandlers(bus, { events });
    return {
      async stop() {
        clearInterval(sweeper);
        await events.flush();
        await legacy.stop();
      },
    };
  },
});
