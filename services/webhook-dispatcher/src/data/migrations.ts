import type { Connection } from '@platform/mongo';
import type { DeliveryJob } from '../domain/jobs';

/**
 * A delivery still waiting in the `deliveries` collection of releases before the job stream, as stored there: the
 * job's fields under the same names, plus its id, attempt count and due time in their stored form.
 */
export interface LegacyPending {
  _id: string;
  partition: string;
  tenantId: string;
  projectId: string;
  destinationId: string;
  eventId: string;
  eventType: string;
  body: string;
  traceparent?: string;
  attemptCount: number;
  nextAttemptAt: Date | null;
  createdAt: Date;
}

/** The job for a legacy delivery's next attempt, due when the old poller would have made it (at once if unscheduled). */
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

/**
 * `pnpm migrate`'s step for webhook-dispatcher. Releases before the job stream kept pending deliveries (and their
 * retries) in a `deliveries` collection, polled from the database: each one still pending is handed to the job stream
 * of its partition (`schedule`: its job for the next attempt, at its due time, published with a message id JetStream
 * drops a repeat of) and then marked `handedOver`, so an upgrade loses no accepted delivery and a second run hands
 * over nothing. Returns how many were handed over.
 */
export async function handOverLegacyDeliveries(db: Connection, schedule: (partition: string, job: DeliveryJob) => Promise<void>): Promise<number> {
  const collection = db.collection('deliveries');
  let moved = 0;
  for (;;) {
    const batch = (await collection.find({ status: 'pending' }, { projection: { attempts: 0 } }).limit(200).toArray()) as unknown as LegacyPending[];
    if (!batch.length) return moved;
    for (const d of batch) {
      await schedule(d.partition, jobFromLegacy(d));
      await collection.updateOne({ _id: d._id as never, status: 'pending' }, { $set: { status: 'handedOver', updatedAt: new Date() } });
      moved++;
    }
  }
}
