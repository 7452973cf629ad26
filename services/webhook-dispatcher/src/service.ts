import { eventCreated, eventFilter, PLATFORM_EVENTS_STREAM, type EventEnvelope } from '@platform/contracts';
import { consumeDurable } from '@platform/bus';
import { defineService } from '@platform/runtime';
import { webhookDispatcherConfig } from './config';
import { deliveryRepo } from './data/delivery.repo';
import { destinationView } from './domain/destinations';
import { deliverEventCreated } from './domain/deliver';

export const webhookDispatcher = defineService({
  name: 'webhook-dispatcher',
  config: webhookDispatcherConfig,
  uses: { mongo: true },
  async start({ config, bus, nc, db }) {
    const deliveries = deliveryRepo(db!);
    const destinations = destinationView(bus, nc, config.DESTINATION_CACHE_MS);
    const deps = { deliveries, destinations, timeoutMs: config.WEBHOOK_TIMEOUT_MS };
    const consumer = await consumeDurable<EventEnvelope>(nc, {
      stream: PLATFORM_EVENTS_STREAM,
      durable: 'webhook-dispatcher-deliveries',
      filterSubjects: [eventFilter(eventCreated)],
      concurrency: config.WEBHOOK_CONCURRENCY,
      ackWaitMs: config.WEBHOOK_TIMEOUT_MS * 3,
      nakDelayMs: config.WEBHOOK_RETRY_DELAY_MS,
      handler: (envelope) => deliverEventCreated(deps, envelope),
    });
    return {
      async stop() {
        await consumer.stop();
        destinations.stop();
      },
    };
  },
});
