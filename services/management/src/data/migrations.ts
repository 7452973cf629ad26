import type { StoredPendingEvent } from '@platform/contracts';
import type { Connection } from '@platform/mongo';
import { apiKeyModel } from './api-key.model';
import { appModel } from './app.model';

/** An app event as releases before the app outbox wrote it: a document of its own in `appEvents`. */
interface HeldAppEvent {
  _id: string;
  appId: string;
  /** The revision the change produces; -1 for a deletion. */
  revision: number;
  /** Written before the change and not released yet (released ones were waiting to be relayed). */
  held?: boolean;
  pendingEvents?: Record<string, StoredPendingEvent>;
}

/**
 * `pnpm migrate`'s steps for management (each idempotent; each returns how many rows it converted).
 *
 * Releases before the app outbox wrote an app's events to `appEvents`, held before the change and released after
 * it. A row still there is resolved as those releases' sweep did: an event whose change landed (the app reached its
 * revision, or is gone for a deletion) and every released one go into the app's own outbox (the app document's
 * `pendingEvents`, or, for an app that is gone, a hidden document that the outbox deletes once the event is out), where
 * management's outbox publishes them; an event whose change never landed is dropped. Then the row goes.
 */
export async function moveAppEvents(db: Connection): Promise<{ moved: number; dropped: number }> {
  const rows = db.collection<HeldAppEvent>('appEvents');
  const Apps = appModel(db);
  let moved = 0;
  let dropped = 0;
  for (;;) {
    const batch = await rows.find({}).limit(200).toArray();
    if (!batch.length) return { moved, dropped };
    for (const e of batch) {
      const app = await Apps.findOne({ _id: e.appId }, { revision: 1 }).lean<{ revision: number }>();
      const landed = !e.held || (e.revision === -1 ? app === null : app !== null && app.revision >= e.revision);
      const events = Object.values(e.pendingEvents ?? {});
      if (landed && events.length) {
        const set = {
          ...Object.fromEntries(events.map((p) => [`pendingEvents.${p.id}`, p])),
          outboxPending: true,
          ...(app ? {} : { outboxDelete: true }),
        };
        // A gone app's document is made again hidden (never read: every read filters on `outboxDelete`).
        await Apps.collection.updateOne(
          { _id: e.appId as never },
          { $set: set, $inc: { outboxSeq: 1 } },
          { upsert: app === null },
        );
        moved++;
      } else dropped++;
      await rows.deleteOne({ _id: e._id });
    }
  }
}

/** Keys stored before `live` existed get it (keys being revoked, `outboxDelete`, do not). */
export async function markLiveApiKeys(db: Connection): Promise<number> {
  const r = await apiKeyModel(db).collection.updateMany(
    { live: { $exists: false }, outboxDelete: { $ne: true } },
    { $set: { live: true } },
  );
  return r.modifiedCount;
}
