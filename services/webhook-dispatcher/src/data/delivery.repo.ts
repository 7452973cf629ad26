import { currentTraceparent } from '@platform/telemetry';
import type { PendingEvent, ProjectScope, WebhookDelivery } from '@platform/contracts';
import { isDuplicateKey, iso, scoped, type Connection } from '@platform/mongo';
import { outboxOnUpdate, type OutboxRelay } from '@platform/outbox';
import { deliveryClaimModel, deliveryModel, type DeliveryAttemptDoc, type DeliveryDoc, type DeliveryStatus } from './delivery.model';

export type NewDelivery = Pick<DeliveryDoc, '_id' | 'tenantId' | 'projectId' | 'destinationId' | 'eventId' | 'eventType' | 'body'>;

export function toWebhookDelivery(d: DeliveryDoc): WebhookDelivery {
  return {
    id: d._id,
    destinationId: d.destinationId,
    eventId: d.eventId,
    eventType: d.eventType,
    status: d.status,
    attemptCount: d.attemptCount,
    nextAttemptAt: d.status === 'pending' ? (iso(d.nextAttemptAt) ?? null) : null,
    lastStatusCode: d.lastStatusCode ?? null,
    lastError: d.lastError ?? null,
    attempts: (d.attempts ?? []).map((a) => ({
      attempt: a.attempt,
      at: iso(a.at)!,
      statusCode: a.statusCode ?? null,
      ok: a.ok,
      error: a.error ?? null,
      durationMs: a.durationMs,
    })),
    createdAt: iso(d.createdAt)!,
    updatedAt: iso(d.updatedAt)!,
  };
}

export type DeliveryRepo = ReturnType<typeof deliveryRepo>;

/** A destination with as many attempts in flight as it may have: its due deliveries are not claimed for now. */
export interface BusyDestination {
  tenantId: string;
  projectId: string;
  destinationId: string;
}

/** A claim taken at insert: the inserting worker sends the first attempt at once, nobody else before the lease ends. */
export interface Claim {
  token: string;
  leaseMs: number;
}

export function deliveryRepo(db: Connection, partition: string, relay: OutboxRelay) {
  const Model = deliveryModel(db);
  /** Returns the deliveries this call inserted (already claimed by `claim` when one is given). */
  const scheduleBatch = async (deliveries: NewDelivery[], now: Date, traceparent: string | undefined, claim?: Claim): Promise<DeliveryDoc[]> => {
    const leased = claim ? { nextAttemptAt: new Date(now.getTime() + claim.leaseMs), claimToken: claim.token } : { nextAttemptAt: now, claimToken: null };
    const fields = (d: NewDelivery) => ({
      ...d,
      ...(traceparent ? { traceparent } : {}),
      partition,
      status: 'pending' as const,
      attemptCount: 0,
      ...leased,
      lastStatusCode: null,
      lastError: null,
      attempts: [],
      createdAt: now,
      updatedAt: now,
    });
    const inserted = (upsertedIds: Record<string, unknown> | undefined) =>
      Object.keys(upsertedIds ?? {}).map((i) => fields(deliveries[Number(i)]!) as unknown as DeliveryDoc);
    try {
      const res = await Model.bulkWrite(
        deliveries.map((d) => ({
          updateOne: {
            filter: { _id: d._id },
            update: {
              $setOnInsert: fields(d),
            },
            upsert: true,
          },
        })),
        { ordered: false },
      );
      return inserted(res.upsertedIds as Record<string, unknown>);
    } catch (err) {
      // two replicas upserting the same delivery at once: one insert wins, the other is a duplicate
      if (!isDuplicateKey(err) && !(err as { writeErrors?: unknown[] }).writeErrors?.every((e) => isDuplicateKey(e))) throw err;
      return inserted((err as { result?: { upsertedIds?: Record<string, unknown> } }).result?.upsertedIds);
    }
  };

  const Claims = deliveryClaimModel(db);
  /** Due deliveries read but not yet tried (claimDue is called by one worker loop at a time). */
  let candidates: DeliveryDoc[] = [];
  /**
   * Deliveries this process inserted already claimed and has not given back: they have no claim record, so recording
   * their attempt skips the claim clean-up (one database statement less per first attempt).
   */
  const claimedAtInsert = new Set<string>();
  const forgetClaims = async (id: string) => {
    if (claimedAtInsert.delete(id)) return;
    await Claims.deleteMany({ deliveryId: id }).catch(() => undefined);
  };

  return {
    model: Model,

    /** Records deliveries as pending and due now; ones already recorded (a redelivered event) are left as they are. */
    async schedule(deliveries: NewDelivery[], now = new Date(), claim?: Claim): Promise<DeliveryDoc[]> {
      // Small batches: FerretDB holds a database connection per statement of a batched write until the batch ends.
      // The event's trace (the consumer's span is active here) follows the deliveries to their attempts.
      const traceparent = currentTraceparent();
      const inserted: DeliveryDoc[] = [];
      for (let i = 0; i < deliveries.length; i += 8) inserted.push(...(await scheduleBatch(deliveries.slice(i, i + 8), now, traceparent, claim)));
      if (claim) {
        // bounded: an id left behind only costs the clean-up statement it would have skipped
        if (claimedAtInsert.size > 10_000) claimedAtInsert.clear();
        for (const d of inserted) claimedAtInsert.add(d._id);
      }
      return inserted;
    },

    /**
     * Claims the most overdue pending delivery for `leaseMs`; null when nothing is due. A claim is the insert of a
     * claim record `<id>@<due time>` (exactly one replica's insert of an id succeeds, on every Mongo-wire server,
     * where two concurrent findOneAndUpdate claims of one document can both succeed on FerretDB), then the lease is
     * written only if the delivery is still pending at that due time. Due deliveries are read a batch at a time.
     * Deliveries to `busy` destinations are skipped (left pending and due, for a later claim).
     */
    async claimDue(token: string, leaseMs: number, busy: readonly BusyDestination[] = [], now = new Date()): Promise<DeliveryDoc | null> {
      const isBusy = (c: DeliveryDoc) => busy.some((b) => b.destinationId === c.destinationId && b.tenantId === c.tenantId && b.projectId === c.projectId);
      for (let round = 0; round < 2; round++) {
        if (!candidates.length) {
          // Destinations at their in-flight cap are left out: their due deliveries stay pending, untouched.
          const notBusy = busy.length ? { $nor: busy.map((b) => ({ tenantId: b.tenantId, projectId: b.projectId, destinationId: b.destinationId })) } : {};
          candidates = await Model.find({ partition, status: 'pending', nextAttemptAt: { $lte: now }, ...notBusy }, { attempts: 0 })
            .sort({ nextAttemptAt: 1 })
            .limit(32)
            .lean<DeliveryDoc[]>();
          if (!candidates.length) return null;
        }
        while (candidates.length) {
          const c = candidates.shift()!;
          if (isBusy(c)) continue;
          const due = c.nextAttemptAt ?? new Date(0);
          const claimId = `${c._id}@${due.getTime()}`;
          try {
            await Claims.create({ _id: claimId, deliveryId: c._id, createdAt: now });
          } catch (err) {
            if (!isDuplicateKey(err)) throw err;
            // Taken by someone else, unless the claimer died between the claim and the lease (a SIGKILL in between
            // left the delivery due with its claim record, which would block it for good): a claim older than a
            // lease, on a delivery still due at the same time, is dropped and claimed afresh (the insert stays the
            // compare-and-set, so only one replica wins it).
            const stale = await Claims.deleteOne({ _id: claimId, createdAt: { $lt: new Date(now.getTime() - leaseMs) } });
            if (stale.deletedCount !== 1) continue;
            try {
              await Claims.create({ _id: claimId, deliveryId: c._id, createdAt: now });
            } catch (again) {
              if (isDuplicateKey(again)) continue;
              throw again;
            }
          }
          const lease = new Date(now.getTime() + leaseMs);
          const res = await Model.updateOne({ _id: c._id, status: 'pending', nextAttemptAt: due }, { $set: { nextAttemptAt: lease, claimToken: token } });
          if (res.matchedCount !== 1) continue;
          return { ...c, attempts: [], nextAttemptAt: lease, claimToken: token };
        }
      }
      return null;
    },

    /**
     * Stores one attempt and what follows from it, if the claim is still ours. `events` (the outcome of a finished
     * delivery) are written in the same update through the outbox, then relayed to JetStream.
     */
    async recordAttempt(
      id: string,
      token: string,
      attempt: DeliveryAttemptDoc,
      next: { status: DeliveryStatus; nextAttemptAt: Date | null },
      events: PendingEvent[] = [],
    ): Promise<boolean> {
      const ops = outboxOnUpdate(events);
      const update = {
        $set: {
          status: next.status,
          nextAttemptAt: next.nextAttemptAt,
          claimToken: null,
          lastStatusCode: attempt.statusCode,
          lastError: attempt.error,
          updatedAt: new Date(),
          ...(events.length ? ops.$set : {}),
        },
        $push: { attempts: attempt },
        $inc: { attemptCount: 1, ...(events.length ? ops.$inc : {}) },
      };
      if (!events.length) {
        const res = await Model.updateOne({ _id: id, claimToken: token }, update);
        await forgetClaims(id);
        return res.matchedCount === 1;
      }
      const d = await relay.exclusive([id], () =>
        Model.findOneAndUpdate({ _id: id, claimToken: token }, update, { new: true })
          .lean<DeliveryDoc & { outboxSeq?: number; pendingEvents?: Record<string, PendingEvent> }>()
          .exec(),
      );
      if (d) relay.flush({ _id: d._id, outboxSeq: d.outboxSeq, pendingEvents: d.pendingEvents });
      await forgetClaims(id);
      return d !== null;
    },

    /** Gives a claim back without an attempt (for example management was not reachable), due again at `at`. */
    async release(id: string, token: string, at: Date): Promise<void> {
      await Model.updateOne({ _id: id, claimToken: token }, { $set: { nextAttemptAt: at, claimToken: null } });
      await forgetClaims(id);
    },

    /** Ends a delivery without an attempt (its destination was disabled or deleted). */
    async cancel(id: string, token: string, reason: string): Promise<void> {
      await Model.updateOne(
        { _id: id, claimToken: token },
        { $set: { status: 'cancelled', nextAttemptAt: null, claimToken: null, lastError: reason, updatedAt: new Date() } },
      );
      await forgetClaims(id);
    },

    /** A delivery that is finished with its one attempt (test deliveries). */
    async insertFinished(d: NewDelivery, attempt: DeliveryAttemptDoc, status: DeliveryStatus): Promise<void> {
      const now = new Date();
      await Model.create({
        ...d,
        partition,
        status,
        attemptCount: 1,
        nextAttemptAt: null,
        claimToken: null,
        lastStatusCode: attempt.statusCode,
        lastError: attempt.error,
        attempts: [attempt],
        createdAt: attempt.at,
        updatedAt: now,
      });
    },

    async list(scope: ProjectScope, destinationId: string, filter: { status?: string; eventType?: string }, page: number, limit: number) {
      const q = {
        partition,
        ...scoped(scope),
        destinationId,
        ...(filter.status ? { status: filter.status } : {}),
        ...(filter.eventType ? { eventType: filter.eventType } : {}),
      };
      const [rows, total] = await Promise.all([
        Model.find(q, { body: 0, claimToken: 0 }).sort({ createdAt: -1, _id: 1 }).skip((page - 1) * limit).limit(limit).lean<DeliveryDoc[]>(),
        Model.countDocuments(q),
      ]);
      return { rows, total };
    },
  };
}
