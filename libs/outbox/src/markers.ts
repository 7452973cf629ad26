import type { StoredPendingEvent } from '@platform/contracts';
import { getLogger } from '@platform/logger';
import { deleteTogether } from '@platform/mongo';
import type { OutboxCollection, Row, Waiting } from './group-commit';

const log = getLogger('outbox');

/** Marker `_id`s sort apart from every scoped id (`tenant:project:id`). */
export const MARKER_PREFIX = '~outbox~';

/**
 * The marker of a batch with events, written in the batch's own insertMany: the `_id`s of its documents that have
 * events and, unless the writer rebuilds them from the row (`eventsOf`), those events, each with its document's `_id`
 * (a flat list: FerretDB v1 stores no nested arrays). It lives until the batch's events are published; one left behind
 * (a crash) is found by the sweep.
 */
export interface Marker {
  _id: string;
  outboxMarker: true;
  createdAt: Date;
  ids: string[];
  events?: Array<{ row: string; event: StoredPendingEvent }>;
}

export interface MarkerOptions<D> {
  instance: string;
  /** The events of a stored row, rebuilt from it (they are then not stored in the marker). */
  eventsOf?: (row: D) => StoredPendingEvent[];
  /** Published batches' markers are deleted together, this long after the first of them (ms). */
  deleteMs: number;
}

/** The batch id a document's `outboxBatch` holds, from its marker's `_id`. */
export const batchOf = (markerId: string) => markerId.slice(MARKER_PREFIX.length);
export const markerIdOf = (batchId: string) => `${MARKER_PREFIX}${batchId}`;

/** The events of each stored document of a marker's batch (documents that are gone or were stored by another batch have none). */
export function eventsOfBatch<D extends Row>(
  marker: Marker,
  stored: D[],
  eventsOf?: (row: D) => StoredPendingEvent[],
): StoredPendingEvent[] {
  const batch = batchOf(marker._id);
  const ids = new Set(marker.ids);
  const found = stored.filter((d) => d.outboxBatch === batch && ids.has(d._id));
  if (!marker.events) return found.flatMap((d) => eventsOf?.(d) ?? []);
  const rows = new Set(found.map((d) => d._id));
  return marker.events.filter((e) => rows.has(e.row)).map((e) => e.event);
}

/** The markers of one collection: made for each batch with events, deleted together once published, swept when orphaned. */
export function batchMarkers<D extends Row>(collection: () => OutboxCollection, opts: MarkerOptions<D>) {
  let seq = 0;
  /**
   * Markers whose events are out, deleted together: one deleteMany a moment instead of a delete per batch, which at a
   * few events a batch was as many commands as the inserts. The filter's `outboxMarker: true` is an equality the
   * database serves (FerretDB v1 applies an `_id: {$in}` alone to every row itself).
   */
  const published = deleteTogether(collection, {
    delayMs: opts.deleteMs,
    filterOf: (ids) => ({ outboxMarker: true, _id: { $in: ids } }),
    onError: (err, count) =>
      log.warn({ err, markers: count }, 'deleting published batch markers failed; the sweep will take them'),
    settled: (ids) => {
      for (const id of ids) out.delete(id);
    },
  });
  /** Markers of this process whose events are out and whose delete is still to come: `find` does not see them. */
  const out = new Set<string>();

  /** Finds the stored documents of `marker` (by its `_id`s, with the batch id as an equality the database can serve). */
  const storedOf = async (marker: Marker): Promise<D[]> => {
    const options = opts.eventsOf ? {} : { projection: { _id: 1, outboxBatch: 1 } };
    return (await collection()
      .find({ _id: { $in: marker.ids }, outboxBatch: batchOf(marker._id) } as never, options as never)
      .limit(marker.ids.length)
      .toArray()) as D[];
  };

  return {
    /** The marker of a batch (none when no document of it has events); stamps the batch id on the documents with events. */
    markerOf(batch: Array<Waiting<D>>): Marker | undefined {
      const withEvents = batch.filter((w) => w.events.length);
      if (!withEvents.length) return undefined;
      const batchId = `${opts.instance}:${++seq}`;
      for (const w of withEvents) w.doc.outboxBatch = batchId;
      const marker: Marker = {
        _id: markerIdOf(batchId),
        outboxMarker: true,
        createdAt: new Date(),
        ids: withEvents.map((w) => w.doc._id),
      };
      if (!opts.eventsOf)
        marker.events = withEvents.flatMap((w) => w.events.map((event) => ({ row: w.doc._id, event })));
      return marker;
    },
    /** The batch's events are out: its marker goes (with the others of the moment). */
    published: (markerId: string) => {
      out.add(markerId);
      published.add(markerId);
    },
    /**
     * The markers `ids` whose events may not be out yet (for the removal of a document whose batch may not be
     * published): those still stored, less the ones this process published and is about to delete (their events
     * would reach core subscribers twice).
     */
    async find(ids: string[]): Promise<Marker[]> {
      const open = ids.filter((id) => !out.has(id));
      if (!open.length) return [];
      return (await collection()
        .find({ outboxMarker: true, _id: { $in: open } } as never)
        .limit(open.length)
        .toArray()) as Marker[];
    },
    /**
     * Republishes the events of batches whose marker is older than `olderThanMs` (their writer died between the insert
     * and the publish), then deletes the markers. Returns how many events were published.
     */
    async sweep(publish: (events: StoredPendingEvent[]) => Promise<void>, olderThanMs: number): Promise<number> {
      let count = 0;
      const markers = (await collection()
        .find({ outboxMarker: true } as never)
        .limit(1000)
        .toArray()) as Marker[];
      for (const m of markers) {
        if (Date.now() - new Date(m.createdAt).getTime() < olderThanMs) continue;
        if (!Array.isArray(m.ids)) {
          log.warn({ markerId: m._id }, 'a batch marker of an earlier release: run `pnpm migrate` to convert it');
          continue;
        }
        const events = eventsOfBatch(m, await storedOf(m), opts.eventsOf);
        if (events.length) await publish(events);
        await collection().deleteOne({ _id: m._id } as never);
        count += events.length;
      }
      return count;
    },
    /** Waits for the deletes under way (and makes the waiting ones now). */
    flush: () => published.flush(),
  };
}
