import type { NatsConnection } from 'nats';
import { consumeDurable, ensureStream, type Publisher, type RunningConsumer } from '@platform/bus';
import type { DeliveryJob, RetryQueue } from '../domain/jobs';

/** Jobs wait in this stream until they are due: a work queue, so a job is gone once a dispatcher has worked it. */
export const WEBHOOK_JOBS_STREAM = 'WEBHOOK_JOBS';
const SUBJECT_PREFIX = 'webhook-jobs';
/** A job that is not due yet is handed back for at most this long, then looked at again (cheap: one message). */
const MAX_WAIT_MS = 60_000;

export async function ensureJobStream(nc: NatsConnection, replicas: number): Promise<void> {
  await ensureStream(
    await nc.jetstreamManager({ timeout: 15_000 }),
    { name: WEBHOOK_JOBS_STREAM, subjects: [`${SUBJECT_PREFIX}.>`], retention: 'workqueue', duplicateWindowMs: 10 * 60 * 1000 },
    replicas,
  );
}

/** Publishes jobs for later (retries, deliveries waiting for a busy destination); the message id makes a repeat a no-op. */
export function retryQueue(pub: Publisher, partition: string): RetryQueue {
  return {
    async schedule(job, key) {
      await pub.publish(`${SUBJECT_PREFIX}.${partition}`, job, `${job.id}#${job.attempt}${key ? `-${key}` : ''}`);
    },
  };
}

/**
 * Works jobs as they fall due. A job read early goes back to the stream with a delay (JetStream redelivers it then),
 * so retries survive restarts without any poller or database query; `work` answers `{ laterMs }` to put a job back
 * (its destination is at its cap).
 */
export function consumeJobs(
  nc: NatsConnection,
  opts: { partition: string; concurrency: number; ackWaitMs: number; nakDelayMs: number; work: (job: DeliveryJob) => Promise<void | { laterMs: number }> },
): Promise<RunningConsumer> {
  return consumeDurable<DeliveryJob>(nc, {
    stream: WEBHOOK_JOBS_STREAM,
    durable: `webhook-dispatcher-jobs-${opts.partition}`,
    filterSubjects: [`${SUBJECT_PREFIX}.${opts.partition}`],
    concurrency: opts.concurrency,
    ackWaitMs: opts.ackWaitMs,
    nakDelayMs: opts.nakDelayMs,
    // Jobs handed back until they are due count as unacknowledged: never let them block the due ones.
    maxAckPending: -1,
    terminateInvalid: true,
    handler: async (job) => {
      const wait = (job.dueAt ? Date.parse(job.dueAt) : 0) - Date.now();
      if (wait > 0) return { laterMs: Math.min(wait, MAX_WAIT_MS) };
      return opts.work(job);
    },
  });
}
