import type { Connection } from '@platform/mongo';

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

/**
 * `pnpm migrate`'s step for webhook-dispatcher. Releases before the job stream kept pending deliveries (and their
 * retries) in a `deliveries` collection, polled from the database: each one still pending is handed to the job stream
 * of its partition (`schedule`: its job for the next attempt, `jobFromLegacy`, published with a message id JetStream
 * drops a repeat of) and then marked `handedOver`, so an upgrade loses no accepted delivery and a second run hands
 * over nothing. Returns how many were handed over.
 */
export async function handOverLegacyDeliveries(
  db: Connection,
  schedule: (d: LegacyPending) => Promise<void>,
): Promise<number> {
  const collection = db.collection('deliveries');
  let moved = 0;
  for (;;) {
    const batch = (await collection
      .find({ status: 'pending' }, { projection: { attempts: 0 } })
      .limit(200)
      .toArray()) as unknown as LegacyPending[];
    if (!batch.length) return moved;
    for (const d of batch) {
      await schedule(d);
      await collection.updateOne(
        { _id: d._id as never, status: 'pending' },
        { $set: { status: 'handedOver', updatedAt: new Date() } },
      );
      moved++;
    }
  }
}
