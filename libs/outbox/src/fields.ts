import mongoose from 'mongoose';
import type { PendingEvent, StoredPendingEvent } from '@platform/contracts';
import { hasUnstorableKeys } from '@platform/mongo';
import { currentTraceparent } from '@platform/telemetry';

/**
 * The fields the outbox keeps in the documents of a collection it writes (spread them into the schema). Events of an
 * update or a removal ride in the changed document: `pendingEvents` maps event id to entry (keys can be removed one by
 * one with `$unset`, which every Mongo-wire server supports), `outboxPending` flags it for the sweep, `outboxSeq` counts
 * writes so a clear never drops an entry it did not publish, `outboxDelete` hides a document until its events are out
 * and it is deleted. Events of an insert ride in the batch's marker (`outboxMarker`, one document per batch that has
 * events); `outboxBatch` names the batch that stored a document.
 */
export const outboxFields = {
  pendingEvents: { type: mongoose.Schema.Types.Mixed, default: undefined },
  outboxPending: { type: Boolean, default: undefined, index: { sparse: true } },
  outboxSeq: { type: Number, default: undefined },
  outboxDelete: { type: Boolean, default: undefined },
  /** Not indexed: only the sweep after a crash reads by it, together with the marker's `_id` list. */
  outboxBatch: { type: String, default: undefined },
  /** Set only on batch markers (never on a document of the collection's own). */
  outboxMarker: { type: Boolean, default: undefined, index: { sparse: true } },
};

/**
 * The type of `pendingEvents` on a stored document: it is a Mixed path, which InferSchemaType can only type as `any`
 * (pass it as StoredDoc's `Narrow`).
 */
export type PendingEventsField = { pendingEvents?: Record<string, StoredPendingEvent> };

/** The outbox's fields left out of a read (merge into a projection). */
export const hiddenFields = {
  pendingEvents: 0,
  outboxPending: 0,
  outboxSeq: 0,
  outboxDelete: 0,
  outboxBatch: 0,
} as const;

/** Filter that hides documents whose removal is being relayed (the outbox merges it into its own writes). */
export const live = { outboxDelete: { $ne: true } } as const;

/** A pending event in the form the database can store (its envelope as JSON text when a key of it cannot be stored). */
export function storedPending(e: PendingEvent): StoredPendingEvent {
  return hasUnstorableKeys(e.envelope) ? { ...e, envelope: JSON.stringify(e.envelope) } : e;
}

/**
 * Events as they are published (and, with `store`, in the form the database stores): stamped with the trace context
 * of the request writing them, so the publish (later, outside the request) is part of that request's trace.
 */
export function storedEvents(events: PendingEvent[], store: boolean): StoredPendingEvent[] {
  if (!events.length) return [];
  // Events that carry a trace context already (the writer's own) keep it, and need no look-up.
  const traceparent = events.some((e) => !e.traceparent) ? currentTraceparent() : undefined;
  const traced = traceparent ? events.map((e) => (e.traceparent ? e : { ...e, traceparent })) : events;
  return store ? traced.map(storedPending) : traced;
}
