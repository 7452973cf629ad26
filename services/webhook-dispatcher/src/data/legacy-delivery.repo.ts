import type { Connection } from '@platform/mongo';

/**
 * A delivery still waiting in the `deliveries` collection of versions before the job stream, as stored there: the
 * job's fields under the same names, plus its id, attempt count and due time in their stored form.
 */
export interface LegacyPending {
  _id: string;
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
 * Versions before the job stream kept pending deliveries (and their retries) in a `deliveries` collection, polled
 * from the database. At start, whatever is still pending there is handed to the job stream once (each as a job for
 * its next attempt, at its due time) and marked `handedOver`, so an upgrade loses no accepted delivery.
 */
export function legacyDeliveryRepo(db: Connection, partition: string) {
  const collection = () => db.collection('deliveries');
  return {
    async handOver(schedule: (d: LegacyPending) => Promise<void>): Promise<number> {
      let moved = 0;
      for (;;) {
        const batch = (await collection().find({ partition, status: 'pending' }, { projection: { attempts: 0 } }).limit(200).toArray()) as unknown as LegacyPending[];
        if (!batch.length) return moved;
        for (const d of batch) {
          await schedule(d);
          await collection().updateOne({ _id: d._id as never, status: 'pending' }, { $set: { status: 'handedOver', updatedAt: new Date() } });
          moved++;
        }
      }
    },
  };
}
