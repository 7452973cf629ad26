import mongoose from 'mongoose';
import type { PendingEvent, StoredPendingEvent } from '@platform/contracts';
import { hasUnstorableKeys } from '@platform/mongo';
import { currentTraceparent } from '@platform/telemetry';

/**
 * Outbox fields every model with pending events carries. `pendingEvents` is a map of event id to entry
 * (map keys can be removed one by one with `$unset`, which every Mongo-wire server supports);
 * `outboxSeq` counts appends so the relay clears `outboxPending` only when nothing new arrived.
 */
export const outboxFields = {
  pendingEvents: { type: mongoose.Schema.Types.Mixed, default: undefined },
  outboxPending: { type: Boolean, default: undefined, index: { sparse: true } },
  outboxSeq: { type: Number, default: undefined },
  outboxDelete: { type: Boolean, default: undefined },
};

/**
 * The type of `pendingEvents` on a stored document: it is a Mixed path, which InferSchemaType can only type as `any`
 * (pass it as StoredDoc's `Narrow`).
 */
export type PendingEventsField = { pendingEvents?: Record<string, StoredPendingEvent> };

/** A pending event in the form the database can store (its envelope as JSON text when a key of it cannot be stored). */
export function storedPending(e: PendingEvent): StoredPendingEvent {
  return hasUnstorableKeys(e.envelope) ? { ...e, envelope: JSON.stringify(e.envelope) } : e;
}

/** Pending events keyed by event id, as the `pendingEvents` field stores them. */
export function pendingEntries(events: PendingEvent[]): Record<string, StoredPendingEvent> {
  return Object.fromEntries(events.map((e) => [e.id, storedPending(e)]));
}

/** Filter that hides documents whose deletion is being relayed (merge into every read). */
export const live = { outboxDelete: { $ne: true } } as const;

/**
 * Stamps outbox entries with the trace context of the request writing them, so the relay (which runs later, outside
 * the request) publishes each event as part of that request's trace.
 */
export function traced(events: PendingEvent[]): PendingEvent[] {
  const traceparent = currentTraceparent();
  return traceparent ? events.map((e) => (e.traceparent ? e : { ...e, traceparent })) : events;
}

/** Update operators that delete a document through the outbox: it is hidden at once and removed once its events are published. */
export function outboxOnDelete(events: PendingEvent[]) {
  const ops = outboxOnUpdate(events);
  return { $set: { ...ops.$set, outboxDelete: true }, $inc: ops.$inc };
}

/** Fields for a new document whose creation emits `events`. */
export function outboxOnCreate(pending: PendingEvent[]) {
  const events = traced(pending);
  return {
    pendingEvents: pendingEntries(events),
    outboxPending: true,
    outboxSeq: 1,
  };
}

/** Update operators that append `events` to a document's outbox (merge into your own `$set`). */
export function outboxOnUpdate(pending: PendingEvent[]) {
  const events = traced(pending);
  return {
    $set: { outboxPending: true, ...Object.fromEntries(events.map((e) => [`pendingEvents.${e.id}`, storedPending(e)])) } as Record<string, unknown>,
    $inc: { outboxSeq: 1 } as Record<string, number>,
  };
}
