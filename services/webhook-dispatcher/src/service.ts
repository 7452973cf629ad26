import { PLATFORM_EVENTS_STREAM, eventFilter, webhookEvents, type EventEnvelope } from '@platform/contracts';
import { consumeDurable, type RunningConsumer } from '@platform/bus';
import { parseHostOverrides } from '@platform/address-safety';
import { getLogger } from '@platform/logger';
import { outboxRelay } from '@platform/outbox';
import { defineService, instanceId } from '@platform/runtime';
import { SecretBox } from '@platform/secrets';
import { webhookDispatcherConfig } from './config';
import { deliveryModel } from './data/delivery.model';
import { deliveryRepo } from './data/delivery.repo';
import { destinationHealthRepo } from './data/destination-health.repo';
import { chatappSender } from './clients/chatapp';
import { httpSender } from './clients/http';
import { managementDestinations, managementDisabler } from './clients/management';
import { scheduleEventDeliveries, type DeliveryDeps } from './domain/deliveries';
import { MalformedEvent } from './domain/families';
import { deliveryWorker } from './domain/worker';
import { registerDeliveryHandlers } from './handlers/deliveries';

const log = getLogger('webhook-dispatcher');

export const webhookDispatcher = defineService({
  name: 'webhook-dispatcher',
  config: webhookDispatcherConfig,
  uses: { mongo: true },
  async start({ config, bus, nc, pub, db }) {
    // Outcome events (webhook.delivery.succeeded / failed) leave through the outbox of the delivery records.
    const relay = outboxRelay(deliveryModel(db), pub, { intervalMs: config.OUTBOX_SWEEP_MS, filter: { partition: config.WEBHOOK_PARTITION } });
    const deliveries = deliveryRepo(db, config.WEBHOOK_PARTITION, relay);
    await relay.sweep();
    const health = destinationHealthRepo(db, config.WEBHOOK_PARTITION);
    const destinations = managementDestinations(bus, nc, config.DESTINATION_CACHE_MS);
    const box = new SecretBox(config.ENCRYPTION_KEY);
    const allowLoopback = config.ALLOW_LOOPBACK_WEBHOOKS === 'true';
    if (allowLoopback) log.warn('ALLOW_LOOPBACK_WEBHOOKS=true: deliveries may reach loopback addresses (development only)');
    const http = httpSender({
      policy: { allowLoopback },
      hostOverrides: parseHostOverrides(config.WEBHOOK_HOST_OVERRIDES),
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      connectTimeoutMs: config.WEBHOOK_CONNECT_TIMEOUT_MS,
      maxResponseBytes: config.WEBHOOK_MAX_RESPONSE_BYTES,
    });
    const deps: DeliveryDeps = {
      deliveries,
      health,
      destinations,
      transports: { http: http.post, chat: chatappSender(bus, config.WEBHOOK_TIMEOUT_MS) },
      openSecret: (sealed) => box.open(sealed),
      disableDestination: managementDisabler(bus),
      retry: { scheduleMs: config.WEBHOOK_RETRY_SCHEDULE_MS, jitter: config.WEBHOOK_RETRY_JITTER },
      disableAfterFailingMs: config.WEBHOOK_DISABLE_AFTER_FAILING_MS,
      testTimeoutMs: config.WEBHOOK_TEST_TIMEOUT_MS,
    };
    const worker = deliveryWorker(deps, {
      instance: instanceId,
      pollIntervalMs: config.WEBHOOK_POLL_INTERVAL_MS,
      concurrency: config.WEBHOOK_CONCURRENCY,
      perDestination: config.WEBHOOK_MAX_IN_FLIGHT_PER_DESTINATION,
      leaseMs: Math.max(config.WEBHOOK_TIMEOUT_MS, config.WEBHOOK_TEST_TIMEOUT_MS) * 2 + 30_000,
    });

    // One durable consumer per webhook event type (nats-server 2.9 takes one filter subject per consumer).
    // A message is acknowledged only after its deliveries are recorded; the worker then sends them.
    const consumers: RunningConsumer[] = [];
    for (const def of webhookEvents) {
      consumers.push(
        await consumeDurable<EventEnvelope>(nc, {
          stream: PLATFORM_EVENTS_STREAM,
          durable: `webhook-dispatcher-${def.name.replace(/\./g, '-')}`,
          filterSubjects: [eventFilter(def)],
          concurrency: Math.max(4, Math.ceil(config.WEBHOOK_CONCURRENCY / 4)),
          ackWaitMs: 30_000,
          nakDelayMs: config.WEBHOOK_REDELIVERY_DELAY_MS,
          // A message that is not JSON can never be scheduled: drop it (logged) instead of redelivering it forever.
          terminateInvalid: true,
          handler: async (envelope) => {
            try {
              // The first attempt goes out at once from here (claimed at insert), retries come from the poller.
              const claim = worker.claim();
              const { scheduled, claimed } = await scheduleEventDeliveries(deps, envelope, claim);
              if (claimed.length) worker.sendClaimed(claimed, claim.token);
              else if (scheduled) worker.kick();
            } catch (err) {
              if (!(err instanceof MalformedEvent)) throw err;
              log.error({ eventId: envelope.id, type: envelope.type, err: err.message }, 'malformed event dropped');
            }
          },
        }),
      );
    }

    registerDeliveryHandlers(bus, deps);
    return {
      async stop(graceMs = 20_000) {
        // Consumers first (no new deliveries are scheduled; unfinished messages go back to the stream), then the
        // worker finishes the attempts it is sending; a claim it cannot finish runs out and another replica retries.
        const started = Date.now();
        await Promise.all(consumers.map((c) => c.stop(graceMs / 3)));
        await worker.stop(Math.max(0, graceMs - (Date.now() - started)));
        await relay.stop();
        destinations.stop();
        await http.close();
      },
    };
  },
});
