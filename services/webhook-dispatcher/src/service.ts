import {
  PLATFORM_EVENTS_STREAM,
  eventFilter,
  projectErasing,
  webhookEventDurable,
  webhookEvents,
  webhookSecretBinding,
  type EventEnvelope,
} from '@platform/contracts';
import { consumeDurable, startErasureWorker, subscribeNotice, type RunningConsumer } from '@platform/bus';
import { eraseProjectDocuments } from '@platform/mongo';
import { parseHostOverrides } from '@platform/address-safety';
import { getLogger } from '@platform/logger';
import { currentTraceparent } from '@platform/telemetry';
import { defineService } from '@platform/runtime';
import { startAuditLog } from '@platform/audit';
import { webhookDispatcherConfig } from './config';
import { attemptRepo } from './data/attempt.repo';
import { deliveryStatsRepo } from './data/delivery-stats.repo';
import { destinationHealthRepo } from './data/destination-health.repo';
import { chatappSender } from './clients/chatapp';
import { httpSender } from './clients/http';
import { managementDestinations, managementDisabler } from './clients/management';
import { consumeJobs, ensureJobStream, jobPartition, retryQueue } from './clients/retry-queue';
import { eventDeliveryJobs, type DeliveryDeps } from './domain/deliveries';
import { MalformedEvent } from './domain/families';
import { deliveryWorker } from './domain/worker';
import type { ManualDeliveryDeps } from './domain/manual-deliveries';
import { SLOT_MS, countedAttempts, statsSink } from './domain/stats';
import { registerDeliveryHandlers, registerManualDeliveryHandlers } from './handlers/deliveries';

const log = getLogger('webhook-dispatcher');

export const webhookDispatcher = defineService({
  name: 'webhook-dispatcher',
  config: webhookDispatcherConfig,
  async start({ config, bus, nc, pub, db, outbox, box }) {
    const partition = jobPartition(config.WEBHOOK_PARTITION);
    await ensureJobStream(nc, (config as { JS_REPLICAS?: number }).JS_REPLICAS ?? 1);
    // Delivery counters (GET …/stats) are kept as rows are recorded, added up in memory and written in batches.
    const statsStore = deliveryStatsRepo(db, config.WEBHOOK_PARTITION, {
      flushMs: config.WEBHOOK_STATS_FLUSH_MS,
      slotMs: SLOT_MS,
    });
    const stats = statsSink(statsStore.add);
    const attempts = countedAttempts(attemptRepo(db, outbox, config.WEBHOOK_PARTITION), stats);
    const health = destinationHealthRepo(db, config.WEBHOOK_PARTITION);
    const destinations = managementDestinations(bus, nc, config.DESTINATION_CACHE_MS);
    const allowLoopback = config.ALLOW_LOOPBACK_WEBHOOKS === 'true';
    if (allowLoopback)
      log.warn('ALLOW_LOOPBACK_WEBHOOKS=true: deliveries may reach loopback addresses (development only)');
    const http = httpSender({
      policy: { allowLoopback },
      hostOverrides: parseHostOverrides(config.WEBHOOK_HOST_OVERRIDES),
      timeoutMs: config.WEBHOOK_TIMEOUT_MS,
      connectTimeoutMs: config.WEBHOOK_CONNECT_TIMEOUT_MS,
      maxResponseBytes: config.WEBHOOK_MAX_RESPONSE_BYTES,
    });
    const deps: DeliveryDeps = {
      attempts,
      health,
      destinations,
      transports: { http: http.post, chat: chatappSender(bus, config.WEBHOOK_TIMEOUT_MS) },
      retries: retryQueue(pub, partition),
      publish: (events) => pub.publishPending(events),
      openSecret: (sealed, d) => box.open(sealed, webhookSecretBinding(d)),
      disableDestination: managementDisabler(bus),
      retry: { scheduleMs: config.WEBHOOK_RETRY_SCHEDULE_MS, jitter: config.WEBHOOK_RETRY_JITTER },
      disableAfterFailingMs: config.WEBHOOK_DISABLE_AFTER_FAILING_MS,
      testTimeoutMs: config.WEBHOOK_TEST_TIMEOUT_MS,
    };
    const worker = deliveryWorker(deps, {
      concurrency: config.WEBHOOK_CONCURRENCY,
      perDestination: config.WEBHOOK_MAX_IN_FLIGHT_PER_DESTINATION,
      capWaitMs: config.WEBHOOK_CAP_WAIT_MS,
      disableSweepMs: 10_000,
    });
    // A message being worked is kept alive by the consumer's heartbeat; a dispatcher that dies hands its messages to
    // another replica after this long.
    const ackWaitMs = 15_000;

    // One durable consumer per webhook event type (nats-server 2.9 takes one filter subject per consumer). Each event's
    // first attempts are sent from its message, which is acknowledged once they are recorded (or queued as jobs).
    const consumers: RunningConsumer[] = [];
    for (const def of webhookEvents) {
      consumers.push(
        await consumeDurable<EventEnvelope>(nc, {
          stream: PLATFORM_EVENTS_STREAM,
          durable: webhookEventDurable(def),
          filterSubjects: [eventFilter(def)],
          concurrency: config.WEBHOOK_CONCURRENCY,
          ackWaitMs,
          nakDelayMs: config.WEBHOOK_REDELIVERY_DELAY_MS,
          // A message that is not JSON can never be scheduled: drop it (logged) instead of redelivering it forever.
          terminateInvalid: true,
          // Events of a project known to have no enabled destination are acknowledged unread (most projects have none):
          // the dispatcher's CPU per such event 0.04-0.05 -> 0.01-0.02 ms (pnpm bench, docs/performance.md).
          skip: (m) => destinations.noneEnabled(m.subject),
          handler: async (envelope) => {
            let jobs: Awaited<ReturnType<typeof eventDeliveryJobs>>;
            try {
              jobs = await eventDeliveryJobs(deps, envelope, currentTraceparent());
            } catch (err) {
              if (!(err instanceof MalformedEvent)) throw err;
              log.error({ eventId: envelope.id, type: envelope.type, err: err.message }, 'malformed event dropped');
              return;
            }
            await Promise.all(
              jobs.map((job) =>
                worker.first(job).catch(async (err) => {
                  // This delivery could not be worked now (management or the database away): it waits as a job, so
                  // the event's other deliveries are not sent again. If even that fails, the event is redelivered.
                  log.warn({ err: (err as Error).message, deliveryId: job.id }, 'first attempt deferred');
                  await deps.retries.schedule(
                    { ...job, dueAt: new Date(Date.now() + config.WEBHOOK_REDELIVERY_DELAY_MS).toISOString() },
                    'deferred',
                  );
                }),
              ),
            );
          },
        }),
      );
    }
    // Retries and deliveries that waited for a slot, as they fall due.
    consumers.push(
      await consumeJobs(nc, {
        partition,
        concurrency: config.WEBHOOK_CONCURRENCY,
        ackWaitMs,
        nakDelayMs: config.WEBHOOK_REDELIVERY_DELAY_MS,
        work: (job) => worker.due(job),
      }),
    );

    // Redeliveries, recoveries and test deliveries are audited here and copied into the tenant's log by management.
    const audit = await startAuditLog({ bus, db, outbox, settleSeconds: config.AUDIT_PENDING_SETTLE_SECONDS });
    registerDeliveryHandlers(bus, deps);
    const manual: ManualDeliveryDeps = {
      ...deps,
      stats,
      statsSlots: (key, ms) => statsStore.slots(key, ms),
      logRetentionMs: config.WEBHOOK_LOG_RETENTION_DAYS * 24 * 3600_000,
      recoverMaxPerCall: config.WEBHOOK_RECOVER_MAX_PER_CALL,
    };
    registerManualDeliveryHandlers(bus, manual);
    // Project erasure: the delivery log, its counters and the destinations' health of the project. Counters added up in
    // memory are dropped first (on every replica when the erasure starts, and here again before the documents go),
    // so a later flush cannot write a document of the erased project again.
    const erasingNotice = subscribeNotice(
      nc,
      projectErasing,
      'webhook-dispatcher',
      (n) => void statsStore.projectErasing(n, n.erasing),
    );
    const erasure = await startErasureWorker(nc, bus, 'webhook-dispatcher', {
      eraseProject: async (scope) => {
        await statsStore.dropProject(scope);
        await eraseProjectDocuments(db, scope);
      },
    });
    return {
      async stop(graceMs = 20_000) {
        // Consumers first (no new deliveries are scheduled; unfinished messages go back to the stream), then the
        // worker finishes the attempts it is sending; a claim it cannot finish runs out and another replica retries.
        const started = Date.now();
        erasingNotice.unsubscribe();
        await Promise.all([...consumers, erasure].map((c) => c.stop(graceMs / 3)));
        await worker.stop(Math.max(0, graceMs - (Date.now() - started)));
        await audit
          .stop()
          .catch((err) => log.warn({ err: (err as Error).message }, 'audit entries not all published at stop'));
        await statsStore
          .stop()
          .catch((err) => log.warn({ err: (err as Error).message }, 'delivery counters not written at stop'));
        destinations.stop();
        await http.close();
      },
    };
  },
});
