import type { EventEnvelope, StoredPendingEvent } from '@platform/contracts';
import type { Connection } from '@platform/mongo';
import { runEventModel } from './run-event.model';
import { storedRow, type NewRunEvent } from './run-event.repo';

/** A row of `runEvents` as releases before the packed row wrote it: every field apart. */
interface EarlierRow {
  _id: string;
  id?: string;
  tenantId: string;
  projectId: string;
  type: string;
  agentId?: string | null;
  conversationId?: string | null;
  messageId?: string | null;
  properties?: Record<string, unknown> | string | null;
  userProperties?: Record<string, unknown> | string | null;
  metadata?: Record<string, unknown> | string | null;
  serverMetadata: NewRunEvent['serverMetadata'];
  createdAt: Date;
  updatedAt?: Date;
  /** The compact form's flags for the event.created (before they moved into `body`). */
  outboxDispatch?: boolean;
  outboxTrace?: string;
  /** Its events, stored in the row by the releases before they were rebuilt from it. */
  pendingEvents?: Record<string, StoredPendingEvent>;
  outboxPending?: boolean;
  outboxSeq?: number;
  outboxBatch?: string;
}

/** A batch marker as earlier releases wrote it: without the list of its rows, or with its events in them. */
interface EarlierMarker {
  _id: string;
  ids?: string[];
  events?: unknown[];
}

const MARKER_PREFIX = '~outbox~';

const parsed = (v: Record<string, unknown> | string | null | undefined) =>
  typeof v === 'string' ? (JSON.parse(v) as Record<string, unknown>) : (v ?? null);

/** The event.created of a row whose events were stored in it: whether it was dispatched, its trace context. */
function storedFlags(row: EarlierRow): { dispatch: boolean; trace?: string } {
  const created = Object.values(row.pendingEvents ?? {})[0];
  const envelope =
    typeof created?.envelope === 'string' ? (JSON.parse(created.envelope) as EventEnvelope) : created?.envelope;
  const dispatch = row.outboxDispatch ?? (envelope?.data as { dispatch?: boolean } | undefined)?.dispatch ?? false;
  return { dispatch, trace: row.outboxTrace ?? created?.traceparent };
}

/** The packed row of an earlier row; its outbox state kept where its events are still to be published. */
function packed(row: EarlierRow): Record<string, unknown> {
  const { dispatch, trace } = storedFlags(row);
  const id = row.id ?? row._id.slice(row.tenantId.length + row.projectId.length + 2);
  const event: NewRunEvent = {
    _id: row._id,
    id,
    tenantId: row.tenantId,
    projectId: row.projectId,
    type: row.type,
    agentId: row.agentId ?? null,
    conversationId: row.conversationId ?? null,
    messageId: row.messageId ?? null,
    properties: parsed(row.properties),
    userProperties: parsed(row.userProperties),
    metadata: parsed(row.metadata),
    serverMetadata: row.serverMetadata,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt ?? row.createdAt,
  };
  const out: Record<string, unknown> = { ...storedRow(event, dispatch, trace) };
  if (row.outboxBatch) out.outboxBatch = row.outboxBatch;
  // A row of the release before group commit still flagged: its events stay in it, and the outbox publishes them.
  if (row.outboxPending)
    Object.assign(out, { pendingEvents: row.pendingEvents, outboxPending: true, outboxSeq: row.outboxSeq });
  return out;
}

/**
 * `pnpm migrate`'s steps for events-ingest (each idempotent; each returns how many rows it converted).
 *
 * Markers of earlier releases name their rows only through the rows' `outboxBatch`, and those of the release that
 * stored the events in the rows leave them there: each such marker gets the list of its rows and their events, as the
 * outbox writes a marker today (its sweep then publishes the batch if it was never published).
 */
export async function convertBatchMarkers(db: Connection): Promise<number> {
  const col = runEventModel(db).collection;
  const markers = (await col.find({ outboxMarker: true }).toArray()) as unknown as EarlierMarker[];
  let converted = 0;
  for (const m of markers) {
    const batch = m._id.slice(MARKER_PREFIX.length);
    const rows = (await col
      .find({ outboxBatch: batch }, { projection: { _id: 1, pendingEvents: 1 } })
      .toArray()) as unknown as EarlierRow[];
    const stored = rows.some((r) => Object.keys(r.pendingEvents ?? {}).length);
    if (m.ids && (m.events || !stored)) continue;
    const set: Record<string, unknown> = { ids: rows.map((r) => r._id) };
    if (stored)
      set.events = rows.flatMap((r) => Object.values(r.pendingEvents ?? {}).map((event) => ({ row: r._id, event })));
    await col.updateOne({ _id: m._id as never }, { $set: set });
    converted++;
  }
  return converted;
}

/**
 * Rows of releases before the packed row (every field apart, or the compact form with the outbox's flags as fields)
 * are written again packed, as events-ingest writes a row today (run-event.repo.ts `storedRow`). Run it after
 * `convertBatchMarkers`: the events a row still stores go (its marker holds them by then), except in a row still
 * flagged for the outbox of the release before group commit.
 */
export async function packRunEventRows(db: Connection): Promise<number> {
  const col = runEventModel(db).collection;
  let converted = 0;
  for (;;) {
    const rows = (await col
      .find({ body: { $exists: false }, outboxMarker: { $ne: true } })
      .limit(200)
      .toArray()) as unknown as EarlierRow[];
    if (!rows.length) return converted;
    for (const row of rows) {
      const r = await col.replaceOne({ _id: row._id as never, body: { $exists: false } }, packed(row));
      converted += r.modifiedCount;
    }
  }
}
