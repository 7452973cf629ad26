import type { ProjectScope, WebhookDelivery } from '@platform/contracts';
import { iso, scoped, type Connection } from '@platform/mongo';
import type { InsertOutcome, Outbox } from '@platform/outbox';
import { attemptModel } from './attempt.model';
export type { DeliveryStatus } from './attempt.model';

/** A row of the delivery log as the domain sees it: a plain object (the model's document type stays in data/). */
export interface StoredAttempt {
  _id: string;
  partition: string;
  tenantId: string;
  projectId: string;
  destinationId: string;
  deliveryId: string;
  eventId: string;
  eventType: string;
  runEventId?: string | null;
  attempt: number;
  at: Date;
  statusCode?: number | null;
  ok: boolean;
  error?: string | null;
  durationMs: number;
  manual?: boolean | null;
  nextAttemptAt?: Date | null;
  latest?: boolean | null;
  deliveryCreatedAt: Date;
  body: string;
  kind: 'attempt' | 'cancel';
  status: 'pending' | 'delivered' | 'failed' | 'cancelled';
}

export type AttemptRow = Omit<StoredAttempt, '_id' | 'partition' | 'latest'>;

export type AttemptRepo = ReturnType<typeof attemptRepo>;

/** `_id` of the row of one attempt of one delivery. */
export const attemptRowId = (deliveryId: string, attempt: number, kind: StoredAttempt['kind'] = 'attempt') =>
  kind === 'attempt' ? `${deliveryId}#${attempt}` : `${deliveryId}#${attempt}-${kind}`;

function toDelivery(latest: StoredAttempt, attempts: StoredAttempt[]): WebhookDelivery {
  const tried = attempts.filter((a) => a.kind === 'attempt').sort((a, b) => a.attempt - b.attempt);
  return {
    id: latest.deliveryId,
    destinationId: latest.destinationId,
    eventId: latest.eventId,
    eventType: latest.eventType,
    runEventId: latest.runEventId ?? null,
    status: latest.status,
    attemptCount: tried.length ? tried[tried.length - 1]!.attempt : 0,
    nextAttemptAt: latest.status === 'pending' ? (iso(latest.nextAttemptAt) ?? null) : null,
    lastStatusCode: latest.statusCode ?? null,
    lastError: latest.error ?? null,
    attempts: tried.map((a) => ({
      attempt: a.attempt,
      at: iso(a.at)!,
      statusCode: a.statusCode ?? null,
      ok: a.ok,
      error: a.error ?? null,
      durationMs: a.durationMs,
      manual: a.manual === true,
    })),
    createdAt: iso(latest.deliveryCreatedAt)!,
    updatedAt: iso(latest.at)!,
  };
}

/** Rows of one delivery in the order they were written: a cancel row of attempt n comes after the attempt row n, a
 * manual cancel row n + 1 after both. */
const byOrder = (a: StoredAttempt, b: StoredAttempt) =>
  a.attempt - b.attempt || (a.kind === 'cancel' ? 1 : 0) - (b.kind === 'cancel' ? 1 : 0);

/**
 * The row that says what the delivery is now: the last one flagged latest (a new row is flagged before its
 * predecessor's flag is dropped, so for a moment two are), else the last one.
 */
export function latestRow(rows: StoredAttempt[]): StoredAttempt | undefined {
  const flagged = rows.filter((r) => r.latest);
  return [...(flagged.length ? flagged : rows)].sort(byOrder).at(-1);
}

export function attemptRepo(db: Connection, outbox: Outbox, partition: string) {
  const Model = attemptModel(db);
  // The rows of one moment are one unordered insertMany (the outbox's group commit; they emit no events).
  const writer = outbox.of(Model);
  return {
    model: Model,

    /**
     * Records one row of a delivery's log as its latest state. `previous` is the row it follows: its flag is dropped
     * after the new row is stored, so a reader always finds the delivery (for a moment with two flagged rows, of which
     * the later one counts), never without one. A crash in between leaves both flagged until the job, redelivered,
     * records again: the row already recorded is left as it is and the previous flag is dropped.
     */
    async record(row: AttemptRow, previous?: string): Promise<InsertOutcome> {
      const outcome = await writer.insert({
        ...row,
        _id: attemptRowId(row.deliveryId, row.attempt, row.kind),
        partition,
        latest: true,
      });
      if (previous) await Model.updateOne({ _id: previous, latest: true }, { $unset: { latest: 1 } });
      return outcome;
    },

    /** Every row of one delivery of a destination (with bodies), or none. */
    async rowsOf(scope: ProjectScope, destinationId: string, deliveryId: string): Promise<StoredAttempt[]> {
      return Model.find({ partition, deliveryId, ...scoped(scope), destinationId }).lean();
    },

    /** The delivery as the log shows it, from its rows. */
    toDelivery(rows: StoredAttempt[]): WebhookDelivery | null {
      const latest = latestRow(rows);
      return latest ? toDelivery(latest, rows) : null;
    },

    /**
     * Marks a delivery queued for a manual attempt: its latest row says `pending` (due now) from here on, if it still is
     * the latest row and still has the status it was read with. Answers whether this call made the change.
     */
    async markQueued(row: StoredAttempt, now = new Date()): Promise<boolean> {
      const r = await Model.updateOne(
        { _id: row._id, latest: true, status: row.status },
        { $set: { status: 'pending', nextAttemptAt: now } },
      );
      return r.modifiedCount === 1;
    },

    /** Takes a mark back (the job could not be queued): the row says what it said before. */
    async unmarkQueued(row: StoredAttempt): Promise<void> {
      await Model.updateOne(
        { _id: row._id, latest: true, status: 'pending' },
        { $set: { status: row.status, nextAttemptAt: row.nextAttemptAt ?? null } },
      );
    },

    /**
     * Latest rows (with bodies) of a destination's deliveries that have one status and were created in [since, until):
     * an equality on the indexed fields narrows the rows, the time range is checked on those.
     */
    async latestWithStatus(
      scope: ProjectScope,
      destinationId: string,
      status: StoredAttempt['status'],
      since: Date,
      until: Date,
      limit: number,
    ): Promise<StoredAttempt[]> {
      return Model.find({
        partition,
        ...scoped(scope),
        destinationId,
        latest: true,
        status,
        deliveryCreatedAt: { $gte: since, $lt: until },
      })
        .limit(limit)
        .lean();
    },

    /** Deliveries of a destination, newest first, each with its attempts. */
    async list(
      scope: ProjectScope,
      destinationId: string,
      filter: { status?: string; eventType?: string; runEventId?: string },
      page: number,
      limit: number,
    ): Promise<{ rows: WebhookDelivery[]; total: number }> {
      const q = {
        partition,
        ...scoped(scope),
        destinationId,
        latest: true,
        ...(filter.status ? { status: filter.status } : {}),
        ...(filter.eventType ? { eventType: filter.eventType } : {}),
        ...(filter.runEventId ? { runEventId: filter.runEventId } : {}),
      };
      const found = await Model.find(q, { body: 0 })
        .sort({ deliveryCreatedAt: -1, _id: 1 })
        .skip((page - 1) * limit)
        .limit(limit)
        .lean();
      // One entry per delivery: while a new row is being recorded its predecessor is flagged too (see `record`).
      const seen = new Set<string>();
      const latest = found.filter((l) => !seen.has(l.deliveryId) && seen.add(l.deliveryId));
      // A short page tells the total; only a full one (or an empty page past the end) needs a count.
      const total =
        latest.length > 0 && latest.length < limit
          ? (page - 1) * limit + latest.length
          : latest.length === 0 && page === 1
            ? 0
            : await Model.countDocuments(q);
      if (!latest.length) return { rows: [], total };
      const all = await Model.find(
        { partition, ...scoped(scope), destinationId, deliveryId: { $in: latest.map((l) => l.deliveryId) } },
        { body: 0 },
      ).lean();
      const byDelivery = new Map<string, StoredAttempt[]>();
      for (const a of all) byDelivery.set(a.deliveryId, [...(byDelivery.get(a.deliveryId) ?? []), a]);
      return {
        rows: latest.map((l) => {
          const rows = byDelivery.get(l.deliveryId) ?? [l];
          return toDelivery(latestRow(rows) ?? l, rows);
        }),
        total,
      };
    },
  };
}
