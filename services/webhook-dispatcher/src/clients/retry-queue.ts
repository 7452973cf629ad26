import type { NatsConnection } from 'nats';
import { WEBHOOK_JOBS_STREAM, webhookJobsDurable, webhookJobsStreamDef, webhookJobsSubject } from '@platform/contracts';
import { consumeDurable, ensureStream, streamSpec, type Publisher, type RunningConsumer } from '@platform/bus';
import type { DeliveryJob, RetryQueue } from '../domain/jobs';

// Jobs wait in the WEBHOOK_JOBS stream until they are due: a work queue, so a job is gone once a dispatcher has worked it.
/** A job that is not due yet is handed back for at most this long, then looked at again (cheap: one message). */
const MAX_WAIT_MS = 60_000;

export async function ensureJobStream(nc: NatsConnection, replicas: number): Promise<void> {
  await ensureStream(await nc.jetstreamManager({ timeout: 15_000 }), streamSpec(webhookJobsStreamDef), replicas);
}

/** The partition's name in the job stream's subjects and durable names, which take no dots or wildcards. */
export const jobPartition = (partition: string) => partition.replace(/[^A-Za-z0-9_-]/g, '_');

/** Publishes jobs for later (retries, deliveries waiting for a busy destination); the message id makes a repeat a no-op. */
export function retryQueue(pub: Publisher, partition: string): RetryQueue {
  return {
    async schedule(job, key) {
      await pub.publish(webhookJobsSubject(partition), job, `${job.id}#${job.attempt}${key ? `-${key}` : ''}`);
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
  opts: {
    partition: string;
    concurrency: number;
    ackWaitMs: number;
    nakDelayMs: number;
    work: (job: DeliveryJob) => Promise<void | { laterMs: number }>;
  },
): Promise<RunningConsumer> {
  return consumeDurable<DeliveryJob>(nc, {
    stream: WEBHOOK_JOBS_STREAM,
    durable: webhookJobsDurable(opts.partition),
    filterSubjects: [webhookJobsSubject(opts.partition)],
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
