import type { ProjectScope } from '@platform/contracts';
import { isDuplicateKey, scopedId, type Connection } from '@platform/mongo';
import { destinationHealthModel } from './destination-health.model';

export type DestinationKey = ProjectScope & { destinationId: string };

export type DestinationHealthRepo = ReturnType<typeof destinationHealthRepo>;

export function destinationHealthRepo(db: Connection, partition: string) {
  const Model = destinationHealthModel(db);
  const idOf = (k: DestinationKey) => `${partition}:${scopedId(k, k.destinationId)}`;
  const base = (k: DestinationKey) => ({
    partition,
    tenantId: k.tenantId,
    projectId: k.projectId,
    destinationId: k.destinationId,
  });
  return {
    model: Model,

    /** A success ends the failing streak. */
    async noteSuccess(k: DestinationKey): Promise<void> {
      await Model.updateOne(
        { _id: idOf(k), failingSince: { $ne: null } },
        { $set: { failingSince: null, updatedAt: new Date() } },
      );
    },

    /** A failure starts a streak if none is running; answers since when the destination has been failing. */
    async noteFailure(k: DestinationKey, now = new Date()): Promise<Date> {
      const found = await Model.findById(idOf(k)).lean();
      if (found?.failingSince) return new Date(found.failingSince);
      if (!found) {
        try {
          await Model.create({
            _id: idOf(k),
            ...base(k),
            failingSince: now,
            pendingDisableReason: null,
            updatedAt: now,
          });
          return now;
        } catch (err) {
          if (!isDuplicateKey(err)) throw err;
        }
      }
      await Model.updateOne({ _id: idOf(k), failingSince: null }, { $set: { failingSince: now, updatedAt: now } });
      const after = await Model.findById(idOf(k)).lean();
      return after?.failingSince ? new Date(after.failingSince) : now;
    },

    /** Remembers that the destination must be disabled (and starts a new streak for when it is enabled again). */
    async requestDisable(k: DestinationKey, reason: string): Promise<void> {
      await Model.updateOne(
        { _id: idOf(k) },
        { $set: { ...base(k), failingSince: null, pendingDisableReason: reason, updatedAt: new Date() } },
        { upsert: true },
      );
    },

    async disableDone(k: DestinationKey, reason: string): Promise<void> {
      await Model.updateOne(
        { _id: idOf(k), pendingDisableReason: reason },
        { $set: { pendingDisableReason: null, updatedAt: new Date() } },
      );
    },

    async pendingDisables(limit = 100): Promise<Array<DestinationKey & { reason: string }>> {
      const docs = await Model.find({ partition, pendingDisableReason: { $ne: null } })
        .limit(limit)
        .lean();
      return docs.map((d) => ({
        tenantId: d.tenantId,
        projectId: d.projectId,
        destinationId: d.destinationId,
        reason: d.pendingDisableReason!,
      }));
    },
  };
}
