import { getLogger } from '@platform/logger';
import { SpanKind, contextFromHeaders, counter, inSpan } from '@platform/telemetry';
import { confirmDisable, runDelivery, type DeliveryDeps } from './deliveries';
import type { DeliveryJob } from './jobs';

const log = getLogger('webhook-dispatcher.worker');

/** `webhook_attempts_total{outcome}`: delivered, retryable, permanent, gone, refused (one per attempt), cancelled. */
const attempts = () => counter('webhook_attempts_total', 'Webhook delivery attempts, by outcome', ['outcome']);
/** Deliveries put back to wait because their destination already had its cap of attempts in flight. */
const capWaits = () =>
  counter(
    'webhook_destination_cap_waits_total',
    'Deliveries put back to wait because their destination had WEBHOOK_MAX_IN_FLIGHT_PER_DESTINATION attempts in flight',
  );

export interface WorkerOptions {
  /** Attempts in flight at once in this process. */
  concurrency: number;
  /**
   * Attempts in flight to one destination at most: a receiver that hangs until the timeout holds this many sends,
   * never all of them, so deliveries to other destinations keep flowing. Deliveries over it wait as jobs.
   */
  perDestination: number;
  /** How long a delivery that found its destination full waits before it is looked at again. */
  capWaitMs: number;
  /** How often destinations whose disabling management has not confirmed yet are retried. */
  disableSweepMs: number;
}

/**
 * Runs delivery jobs: at most `concurrency` at once, at most `perDestination` per destination. Nothing here is
 * stored: a job is a JetStream message that is acknowledged only after its attempt is recorded, so a crash hands it
 * to another replica, and retries wait in the job stream, not in the database.
 */
export function deliveryWorker(deps: DeliveryDeps, opts: WorkerOptions) {
  let active = 0;
  let stopping = false;
  const waiting: Array<() => void> = [];
  const running = new Set<Promise<unknown>>();
  /** Attempts in flight per destination (`tenant \0 project \0 destination`). */
  const inFlight = new Map<string, number>();
  const destKey = (j: DeliveryJob) => `${j.tenantId}\u0000${j.projectId}\u0000${j.destinationId}`;

  const slot = async () => {
    if (active < opts.concurrency) {
      active++;
      return;
    }
    await new Promise<void>((r) => waiting.push(r));
  };
  const freeSlot = () => {
    const next = waiting.shift();
    if (next) next();
    else active--;
  };

  /** Deliveries waiting in this process for a slot of their destination, first come first served. */
  const queued = new Map<string, Array<(slot: boolean) => void>>();
  /**
   * When a destination with attempts in flight last made progress: an attempt handed its slot on, or (none yet) its
   * first attempt started. Kept while any are in flight.
   */
  const progress = new Map<string, number>();

  /**
   * How many deliveries may wait here for a destination's slot: a destination that makes progress (within the last
   * `capWaitMs`) takes a burst into its line, up to `concurrency`; one whose attempts all hang takes only
   * `perDestination` waiters, so a receiver that hangs holds its cap of sends and its cap of waiters, no more.
   */
  const lineLimit = (key: string) => {
    const at = progress.get(key);
    return at !== undefined && Date.now() - at < opts.capWaitMs
      ? Math.max(opts.perDestination, opts.concurrency)
      : opts.perDestination;
  };

  /**
   * Takes one of the destination's slots: at once when it has room, else by waiting here (see `lineLimit`; at most
   * `capWaitMs`) for an attempt to that destination to hand its slot over. False when it did not get one: the caller
   * puts the delivery back as a job, and deliveries to other destinations keep flowing.
   */
  const takeDestination = async (key: string): Promise<boolean> => {
    const n = inFlight.get(key) ?? 0;
    if (n < opts.perDestination) {
      inFlight.set(key, n + 1);
      if (n === 0) progress.set(key, Date.now());
      return true;
    }
    const line = queued.get(key) ?? [];
    if (line.length >= lineLimit(key)) return false;
    queued.set(key, line);
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        const i = line.indexOf(take);
        if (i >= 0) line.splice(i, 1);
        if (line.length === 0 && queued.get(key) === line) queued.delete(key);
        resolve(false);
      }, opts.capWaitMs);
      const take = (slot: boolean) => {
        clearTimeout(timer);
        resolve(slot);
      };
      line.push(take);
    });
  };
  /** Gives a destination's slot to the next delivery waiting for it, or frees it. */
  const releaseDestination = (key: string) => {
    const line = queued.get(key);
    const next = line?.shift();
    if (line && line.length === 0) queued.delete(key);
    if (next) {
      progress.set(key, Date.now());
      next(true);
      return;
    }
    const n = (inFlight.get(key) ?? 1) - 1;
    if (n <= 0) {
      inFlight.delete(key);
      progress.delete(key);
    } else {
      inFlight.set(key, n);
      progress.set(key, Date.now());
    }
  };

  /** Works one job that holds a slot of its destination; resolves when it is recorded. */
  const work = async (job: DeliveryJob) => {
    const key = destKey(job);
    if (stopping) {
      // It waited for its slot while the dispatcher began to stop: left to the stream, like the messages not taken.
      releaseDestination(key);
      throw new Error('the dispatcher is stopping');
    }
    // The destination's slot is held while the receiver has the attempt, not while the outcome is written.
    let held = true;
    const freeDestination = () => {
      if (!held) return;
      held = false;
      releaseDestination(key);
    };
    await slot();
    const parent = job.traceparent ? contextFromHeaders({ traceparent: job.traceparent }) : undefined;
    const done = inSpan(
      'webhook delivery',
      {
        kind: SpanKind.PRODUCER,
        parent,
        attributes: { 'webhook.delivery_id': job.id, 'webhook.attempt': job.attempt },
      },
      async (span) => {
        const run = await runDelivery(deps, job, freeDestination);
        const outcome = run.outcome === 'attempted' ? run.result.kind : run.outcome;
        attempts().inc({ outcome });
        span.setAttribute('webhook.outcome', outcome);
      },
    ).finally(() => {
      freeDestination();
      freeSlot();
    });
    running.add(done);
    try {
      await done;
    } finally {
      running.delete(done);
    }
  };

  const sweepDisables = async () => {
    try {
      for (const p of await deps.health.pendingDisables()) await confirmDisable(deps, p);
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'sweeping pending disables failed');
    }
  };
  const timer = setInterval(() => void sweepDisables(), opts.disableSweepMs);
  timer.unref();
  void sweepDisables();

  return {
    /**
     * A first attempt, from an event's message: worked now, or when its destination's slot comes free within
     * `capWaitMs`; else queued as a job (the event's other deliveries do not wait for it).
     */
    async first(job: DeliveryJob): Promise<void> {
      if (stopping) throw new Error('the dispatcher is stopping');
      if (!(await takeDestination(destKey(job)))) {
        // Its destination has its cap in flight and its line of waiters full (a burst larger than both, or a receiver
        // that hangs): the job is due at once and waits in the line when it comes back (or `capWaitMs` as a job).
        capWaits().inc();
        await deps.retries.schedule({ ...job, dueAt: new Date().toISOString() }, 'wait');
        return;
      }
      await work(job);
    },
    /** A job from the job stream that is due: worked now, or handed back for a while when its destination is full. */
    async due(job: DeliveryJob): Promise<void | { laterMs: number }> {
      if (stopping) throw new Error('the dispatcher is stopping');
      if (!(await takeDestination(destKey(job)))) {
        capWaits().inc();
        return { laterMs: opts.capWaitMs };
      }
      await work(job);
    },
    async stop(graceMs = 15_000): Promise<void> {
      stopping = true;
      clearInterval(timer);
      if (running.size)
        await Promise.race([Promise.allSettled([...running]), new Promise((r) => setTimeout(r, graceMs).unref())]);
    },
  };
}
