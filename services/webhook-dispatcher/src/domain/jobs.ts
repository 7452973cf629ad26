import type { LegacyPending } from '../data/migrations';

/**
 * One attempt of one delivery, as a message: the first attempt of an event's deliveries is worked straight from the
 * event's message, every later one (a retry, or a delivery that waited for its busy destination) travels as a job
 * on a JetStream work queue until it is due.
 */
export interface DeliveryJob {
  /** The `webhook-id`: the same on every attempt. */
  id: string;
  tenantId: string;
  projectId: string;
  destinationId: string;
  eventId: string;
  eventType: string;
  /** The run event's own id (`event.created`); absent on other types and on jobs queued by versions before it. */
  runEventId?: string;
  /** The exact JSON body every attempt sends (and signs). */
  body: string;
  /** W3C trace context of the event that caused it: every attempt is a span of that trace. */
  traceparent?: string;
  /** When the delivery was created (ISO 8601). */
  createdAt: string;
  /** The attempt this job makes (1 for the first). */
  attempt: number;
  /** Not before this time (ISO 8601). */
  dueAt?: string;
  /** A person asked for this attempt (redeliver, recover): recorded on its row; its retries are not manual. */
  manual?: boolean;
  /** The row this attempt follows when it is not `<webhook-id>#<attempt - 1>` (a manual attempt after a cancel). */
  previous?: string;
}

/**
 * The job for the next attempt of a delivery the releases before the job stream left pending (`pnpm migrate`), due when
 * their poller would have made it (at once if unscheduled).
 */
export function jobFromLegacy(d: Omit<LegacyPending, 'partition'>): DeliveryJob {
  return {
    id: d._id,
    tenantId: d.tenantId,
    projectId: d.projectId,
    destinationId: d.destinationId,
    eventId: d.eventId,
    eventType: d.eventType,
    body: d.body,
    ...(d.traceparent ? { traceparent: d.traceparent } : {}),
    createdAt: new Date(d.createdAt).toISOString(),
    attempt: d.attemptCount + 1,
    dueAt: new Date(d.nextAttemptAt ?? Date.now()).toISOString(),
  };
}

export interface RetryQueue {
  /** Queues `job` (due at `job.dueAt`). `key` tells apart two jobs for the same attempt (for example a wait for a slot). */
  schedule(job: DeliveryJob, key?: string): Promise<void>;
}
