import { getLogger } from '@platform/logger';
import { isDuplicateKey, scopedId, type Connection } from '@platform/mongo';
import type { DestinationKey } from './destination-health.repo';
import { deliveryStatsModel } from './delivery-stats.model';

const log = getLogger('webhook-dispatcher.stats');
const HOUR_MS = 3600_000;

interface Pending {
  key: DestinationKey;
  hour: Date;
  inc: Record<string, number>;
}

export type DeliveryStatsRepo = ReturnType<typeof deliveryStatsRepo>;

/**
 * The counters behind `GET …/stats`. Changes are added up in memory per destination and hour and written every
 * `flushMs` with one $inc upsert per touched document, so a busy destination costs a few writes a minute, not one per
 * delivery. A crash loses at most the last `flushMs` of changes (the statistics are a view, the log stays exact).
 */
export function deliveryStatsRepo(db: Connection, partition: string, opts: { flushMs: number; slotMs: number }) {
  const SLOT_MS = opts.slotMs;
  const Model = deliveryStatsModel(db);
  let pending = new Map<string, Pending>();
  let flushing: Promise<void> = Promise.resolve();
  /** Projects being erased (`<tenant>:<project>`): their counters are neither kept nor written meanwhile. */
  const erasing = new Set<string>();
  const projectOf = (k: { tenantId: string; projectId: string }) => `${k.tenantId}:${k.projectId}`;
  /** Drops the project's counters not written yet, and waits for a flush under way (it may hold some of them). */
  const dropProject = async (scope: { tenantId: string; projectId: string }) => {
    for (const [id, p] of pending) if (projectOf(p.key) === projectOf(scope)) pending.delete(id);
    await flushing;
  };
  const docId = (k: DestinationKey, hour: Date) =>
    `${partition}:${scopedId(k, k.destinationId)}:${hour.toISOString().slice(0, 13)}`;

  const write = async (id: string, p: Pending) => {
    const update = {
      $inc: p.inc,
      $setOnInsert: {
        partition,
        tenantId: p.key.tenantId,
        projectId: p.key.projectId,
        destinationId: p.key.destinationId,
        hour: p.hour,
      },
    };
    try {
      await Model.updateOne({ _id: id }, update, { upsert: true });
    } catch (err) {
      // Two replicas creating the same document: the loser's increments go to the one that now exists.
      if (!isDuplicateKey(err)) throw err;
      await Model.updateOne({ _id: id }, { $inc: p.inc });
    }
  };

  const flush = async () => {
    const batch = pending;
    pending = new Map();
    const failed: Array<[string, Pending]> = [];
    await Promise.all(
      [...batch].map(async ([id, p]) => {
        try {
          await write(id, p);
        } catch (err) {
          failed.push([id, p]);
          log.warn({ err: (err as Error).message }, 'delivery counters not written; kept for the next flush');
        }
      }),
    );
    for (const [id, p] of failed) merge(id, p.key, p.hour, p.inc);
  };

  const merge = (id: string, key: DestinationKey, hour: Date, inc: Record<string, number>) => {
    if (erasing.size && erasing.has(projectOf(key))) return;
    let p = pending.get(id);
    if (!p) pending.set(id, (p = { key, hour, inc: {} }));
    for (const [f, n] of Object.entries(inc)) p.inc[f] = (p.inc[f] ?? 0) + n;
  };

  const timer = setInterval(() => {
    if (pending.size) flushing = flushing.then(flush, flush);
  }, opts.flushMs);
  timer.unref();

  return {
    model: Model,

    /** Adds `inc` (counter → n) to the slot of `at` of a destination; written at the next flush. */
    add(key: DestinationKey, at: Date, inc: Record<string, number>): void {
      const t = at.getTime();
      const hour = new Date(t - (t % HOUR_MS));
      const slot = Math.floor((t - hour.getTime()) / SLOT_MS);
      const prefixed: Record<string, number> = {};
      for (const [f, n] of Object.entries(inc)) prefixed[`s.${slot}.${f}`] = n;
      merge(docId(key, hour), key, hour, prefixed);
    },

    /** The destination's slots of the last `ms` (start time → counters). */
    async slots(
      k: DestinationKey,
      ms: number,
      now = Date.now(),
    ): Promise<Array<{ start: number; counters: Record<string, any> }>> {
      const docs = await Model.find({
        partition,
        tenantId: k.tenantId,
        projectId: k.projectId,
        destinationId: k.destinationId,
      }).lean();
      const out: Array<{ start: number; counters: Record<string, any> }> = [];
      for (const d of docs) {
        const hour = new Date(d.hour).getTime();
        if (hour + HOUR_MS <= now - ms) continue;
        for (const [slot, counters] of Object.entries(d.s ?? {}))
          out.push({ start: hour + Number(slot) * SLOT_MS, counters });
      }
      return out;
    },

    /**
     * Project erasure: the project's counters that are not written yet are dropped (after this resolves, nothing of
     * the project is written by this process unless it is added again), so the erasure of its documents is final.
     */
    dropProject,

    /** A project's erasure started (its counters are dropped, and ignored until it ends) or ended. */
    async projectErasing(scope: { tenantId: string; projectId: string }, on: boolean): Promise<void> {
      if (!on) {
        erasing.delete(projectOf(scope));
        return;
      }
      erasing.add(projectOf(scope));
      await dropProject(scope);
    },

    /** Writes what has been added up so far (at stop, and for tests). */
    async flush(): Promise<void> {
      flushing = flushing.then(flush, flush);
      await flushing;
    },

    async stop(): Promise<void> {
      clearInterval(timer);
      flushing = flushing.then(flush, flush);
      await flushing;
    },
  };
}
