import { getLogger } from '@platform/logger';
import { randomId } from '@platform/secrets';
import { SpanKind, contextFromHeaders, counter, inSpan } from '@platform/telemetry';
import { confirmDisable, runDelivery, type DeliveryDeps } from './deliveries';
import type { DeliveryDoc } from '../data/delivery.model';
import type { BusyDestination } from '../data/delivery.repo';

const log = getLogger('webhook-dispatcher.worker');
const CLAIM_TIMEOUT_MS = 15_000;

/** `webhook_attempts_total{outcome}`: delivered, retryable, permanent (one per attempt), cancelled, deferred. */
const attempts = () => counter('webhook_attempts_total', 'Webhook delivery attempts, by outcome', ['outcome']);
/** Deliveries put back to wait (pending, due) because their destination already had its cap of attempts in flight. */
const capWaits = () =>
  counter('webhook_destination_cap_waits_total', 'Deliveries put back to wait because their destination had WEBHOOK_MAX_IN_FLIGHT_PER_DESTINATION attempts in flight');

export interface WorkerOptions {
  instance: string;
  pollIntervalMs: number;
  concurrency: number;
  /**
   * Attempts in flight to one destination at most: a receiver that hangs until the timeout holds this many sends,
   * never all of them, so deliveries to other destinations keep flowing. Deliveries over it wait (pending, due).
   */
  perDestination: number;
  /** How long a claim lasts before another worker may take the delivery (longer than one attempt). */
  leaseMs: number;
}

/**
 * Works due deliveries from the deliveries collection: claims them one by one (findOneAndUpdate) up to the
 * concurrency limit, on a timer and whenever new work is scheduled. Retries live in the database, so a restart
 * (or another replica) picks them up when they fall due.
 */
export function deliveryWorker(deps: DeliveryDeps, opts: WorkerOptions) {
  let active = 0;
  let stopping = false;
  let polling = false;
  let pollAgain = false;
  let ticks = 0;
  const running = new Set<Promise<void>>();
  /**
   * Whether due deliveries may be waiting for a free slot: the last poll stopped at the concurrency limit, a delivery
   * was put back for its busy destination, or new work was announced. Only then does the end of an attempt trigger a
   * poll (a query of the deliveries collection); otherwise the timer's poll finds retries as they fall due. Before, every
   * attempt ended with a poll: one more database read per delivery, which at 100 events/s slowed the deliveries.
   */
  let mayHaveDue = true;
  const pollIfWaiting = () => {
    if (mayHaveDue) void poll();
  };
  /** Attempts in flight per destination (`tenant \0 project \0 destination`). */
  const inFlight = new Map<string, { dest: BusyDestination; count: number }>();
  const destKey = (d: BusyDestination) => `${d.tenantId}\u0000${d.projectId}\u0000${d.destinationId}`;
  const busy = (): BusyDestination[] => [...inFlight.values()].filter((f) => f.count >= opts.perDestination).map((f) => f.dest);

  /** Sends one claimed delivery, counted against the concurrency limit; when it ends, more due work is looked for. */
  const send = (doc: DeliveryDoc, token: string) => {
    const key = destKey(doc);
    const slot = inFlight.get(key) ?? { dest: { tenantId: doc.tenantId, projectId: doc.projectId, destinationId: doc.destinationId }, count: 0 };
    if (slot.count >= opts.perDestination) {
      // Its destination is full: the delivery waits, pending and due, without an attempt; the poller claims it once
      // one of the destination's attempts ends (nothing is lost, nothing is sent twice).
      capWaits().inc();
      mayHaveDue = true;
      void deps.deliveries
        .release(doc._id, token, new Date())
        .catch((err) => log.warn({ err: (err as Error).message, deliveryId: doc._id }, 'could not put a delivery back to wait; its claim runs out and it is retried then'));
      return;
    }
    slot.count++;
    inFlight.set(key, slot);
    // The destination's slot is held while the receiver has the attempt (lookup and HTTP), not while the outcome is
    // written: a busy healthy destination is limited by its receiver, not by our database.
    let held = true;
    const freeSlot = () => {
      if (!held) return;
      held = false;
      if (--slot.count <= 0) inFlight.delete(key);
      pollIfWaiting();
    };
    active++;
    const parent = doc.traceparent ? contextFromHeaders({ traceparent: doc.traceparent }) : undefined;
    const job = inSpan('webhook delivery', { kind: SpanKind.PRODUCER, parent, attributes: { 'webhook.delivery_id': doc._id, 'webhook.attempt': doc.attemptCount + 1 } }, async (span) => {
      const run = await runDelivery(deps, doc, token, freeSlot);
      const outcome = run.outcome === 'attempted' ? run.result.kind : run.outcome;
      attempts().inc({ outcome });
      span.setAttribute('webhook.outcome', outcome);
    })
      .catch((err) => log.error({ err, deliveryId: doc._id }, 'delivery failed unexpectedly; it is retried when its claim runs out'))
      .finally(() => {
        active--;
        freeSlot();
        running.delete(job);
        pollIfWaiting();
      });
    running.add(job);
  };

  const poll = async (): Promise<void> => {
    if (stopping) return;
    if (polling) {
      pollAgain = true;
      return;
    }
    polling = true;
    try {
      do {
        pollAgain = false;
        while (!stopping && active < opts.concurrency) {
          const token = `${opts.instance}:${randomId(12)}`;
          // A database call that never answers must not stop this worker for good: give up on it after a while.
          const doc = await Promise.race([
            deps.deliveries.claimDue(token, opts.leaseMs, busy()),
            new Promise<never>((_, reject) => setTimeout(() => reject(new Error('claiming a due delivery took too long')), CLAIM_TIMEOUT_MS).unref()),
          ]);
          if (!doc) {
            // nothing due (deliveries of a busy destination may still wait for one of its slots)
            mayHaveDue = inFlight.size > 0 && busy().length > 0;
            break;
          }
          send(doc, token);
        }
        if (active >= opts.concurrency) mayHaveDue = true;
      } while (pollAgain && !stopping);
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'polling for due deliveries failed');
    } finally {
      polling = false;
    }
  };

  const sweepDisables = async () => {
    try {
      for (const p of await deps.health.pendingDisables()) await confirmDisable(deps, p);
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'sweeping pending disables failed');
    }
  };

  const timer = setInterval(() => {
    void poll();
    if (++ticks % 10 === 0) void sweepDisables();
  }, opts.pollIntervalMs);
  timer.unref();
  void sweepDisables();

  return {
    /** A claim for deliveries inserted already claimed (their first attempt goes out now, without a poll). */
    claim(): { token: string; leaseMs: number } {
      return { token: `${opts.instance}:${randomId(12)}`, leaseMs: opts.leaseMs };
    },
    /** Sends deliveries claimed with `claim()`; after a crash their lease runs out and the poller takes them. */
    sendClaimed(docs: DeliveryDoc[], token: string): void {
      if (stopping) return;
      for (const doc of docs) send(doc, token);
    },
    /** New deliveries were scheduled: look now rather than at the next tick. */
    kick(): void {
      mayHaveDue = true;
      void poll();
    },
    async stop(graceMs = 15_000): Promise<void> {
      stopping = true;
      clearInterval(timer);
      if (running.size) await Promise.race([Promise.allSettled([...running]), new Promise((r) => setTimeout(r, graceMs).unref())]);
    },
  };
}
