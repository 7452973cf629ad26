import type { PendingEvent, ProjectScope, RunEvent } from '@platform/contracts';
import { iso, loadedJson, scoped, scopedId, type Connection } from '@platform/mongo';
import type { Outbox } from '@platform/outbox';
import { currentTraceparent } from '@platform/telemetry';
import { runEventModel, type RunEventDoc } from './run-event.model';

type ServerMetadata = NonNullable<RunEventDoc['serverMetadata']>;

/** What a packed row keeps in its `body` (JSON text): the fields no read filters or sorts by. */
interface PackedBody {
  type: string;
  agentId?: string;
  properties?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  serverMetadata: ServerMetadata;
  /** The event.created is dispatched to the agent (absent: not). */
  dispatch?: true;
  /** The trace context of the request that wrote it, when its trace is sampled. */
  trace?: string;
}

/** A row's fields, its `body` read out. */
function unpacked(d: RunEventDoc): RunEventDoc & { dispatch: boolean; trace?: string } {
  const b = JSON.parse(d.body!) as PackedBody;
  return {
    ...d,
    type: b.type,
    agentId: b.agentId ?? null,
    properties: b.properties ?? null,
    metadata: b.metadata ?? null,
    serverMetadata: b.serverMetadata,
    dispatch: b.dispatch ?? false,
    trace: b.trace,
  };
}

/** A stored run event, from its row (see `storedRow`: fields that are null may be absent). */
export function toRunEvent(row: RunEventDoc): RunEvent {
  const d = unpacked(row);
  return {
    // The id is kept only in `_id` (`<tenant>:<project>:<id>`).
    id: d._id.slice(d.tenantId.length + d.projectId.length + 2),
    tenantId: d.tenantId,
    projectId: d.projectId,
    type: d.type!,
    agentId: d.agentId ?? null,
    conversationId: d.conversationId ?? null,
    messageId: d.messageId ?? null,
    properties: loadedJson(d.properties ?? null),
    userProperties: loadedJson(d.userProperties ?? null),
    metadata: loadedJson(d.metadata ?? null),
    serverMetadata: d.serverMetadata!,
    createdAt: iso(d.createdAt)!,
    // A run event never changes: its row keeps only createdAt.
    updatedAt: iso(d.createdAt)!,
  };
}

/** Whether a W3C traceparent (`00-<trace>-<span>-<flags>`) is of a sampled trace, one whose spans are exported. */
const sampled = (traceparent: string) => (Number.parseInt(traceparent.slice(-2), 16) & 1) === 1;

/**
 * A run event as its row ("packed"): as fields only what a read filters or sorts by (`_id`, the scope, the conversation
 * and message anchors, `userProperties`, `createdAt`), everything else as one JSON text in `body`. The id is kept in
 * `_id` only (`<tenant>:<project>:<id>`); a field that is null is left out (read back as null), so is updatedAt (a run
 * event never changes: it equals createdAt); `userProperties` is stored as its JSON text. The body carries the dispatch
 * flag when it is true and the request's trace context when its trace is sampled (the sweep rebuilds the event.created
 * from the row after a crash). FerretDB converts each field and each nested map of a document on every insert:
 * the packed row costs FerretDB and PostgreSQL a fifth to a quarter less CPU per event than the same event as fields
 * (docs/performance.md, "The event row packed"). Rows of earlier releases (every field apart) are packed by `pnpm migrate`.
 */
export function storedRow(e: NewRunEvent, dispatch: boolean, trace: string | undefined): RunEventDoc {
  const row: Partial<RunEventDoc> = { _id: e._id, tenantId: e.tenantId, projectId: e.projectId };
  if (e.conversationId != null) row.conversationId = e.conversationId;
  if (e.messageId != null) row.messageId = e.messageId;
  if (e.userProperties != null) row.userProperties = JSON.stringify(e.userProperties);
  row.createdAt = e.createdAt;
  const body: PackedBody = { type: e.type, serverMetadata: e.serverMetadata };
  if (e.agentId != null) body.agentId = e.agentId;
  if (e.properties != null) body.properties = e.properties;
  if (e.metadata != null) body.metadata = e.metadata;
  if (dispatch) body.dispatch = true;
  if (trace && sampled(trace)) body.trace = trace;
  row.body = JSON.stringify(body);
  return row as RunEventDoc;
}

/** A new run event before it is stored: the API's event with its times as dates, and its row key. */
export type NewRunEvent = Omit<RunEvent, 'createdAt' | 'updatedAt'> & { _id: string; createdAt: Date; updatedAt: Date };

export type RunEventRepo = ReturnType<typeof runEventRepo>;

/** Stored events this process wrote or read lately, by `_id` (run events are never changed once stored). */
const RECENT_MAX = 5_000;

/** The events a stored event emits (from its row: at insert, and again by the sweep after a crash). */
export type RunEventEvents = (event: RunEvent, dispatch: boolean) => PendingEvent[];

export function runEventRepo(db: Connection, outbox: Outbox, eventsOf: RunEventEvents) {
  const Model = runEventModel(db);
  // A replay (the same id again, typically a client retry seconds later) is answered from here without touching the
  // database: on FerretDB v1 a read by _id scans the whole collection (docs/performance.md). Bounded, oldest dropped first.
  const recent = new Map<string, RunEvent>();
  // Concurrent new events are written together: one unordered insertMany per batch (the outbox's group commit), with
  // one marker per batch instead of an update per event once its event.created is published. The events are not stored:
  // after a crash the sweep rebuilds them from the row (same event ids, so JetStream drops repeats).
  const writer = outbox.of(Model, {
    // One insert at a time: the next batch gathers while it runs, so batches are larger (about 20 rows instead of 15
    // at full load) and the database's per-statement cost is shared by more events (docs/performance.md, "Group
    // commit, one insert in flight"): new events 3,088 and 2,856 req/s against 2,668 and 2,563 with two in flight.
    maxInFlight: 1,
    eventsOf: (d) => {
      const { dispatch, trace } = unpacked(d);
      return eventsOf(toRunEvent(d), dispatch).map((e) => (trace ? { ...e, traceparent: trace } : e));
    },
  });
  const hidden = writer.hidden;
  const remember = (id: string, e: RunEvent) => {
    recent.set(id, e);
    if (recent.size > RECENT_MAX) recent.delete(recent.keys().next().value!);
  };
  return {
    model: Model,
    /** Forgets the remembered ids of a project's (or one conversation's) events: they were erased. */
    forget(scope: ProjectScope, conversationId: string | null): void {
      const prefix = scopedId(scope, '');
      for (const [id, e] of recent)
        if (id.startsWith(prefix) && (conversationId === null || e.conversationId === conversationId))
          recent.delete(id);
    },
    /** Inserts once; when the id exists returns the stored row untouched (`created: false`). */
    async insertOnce(doc: Omit<NewRunEvent, '_id'>, dispatch: boolean): Promise<{ created: boolean; event: RunEvent }> {
      const _id = scopedId(doc, doc.id);
      const known = recent.get(_id);
      if (known) return { created: false, event: known };
      const full: NewRunEvent = { _id, ...doc };
      const event: RunEvent = {
        ...doc,
        createdAt: doc.createdAt.toISOString(),
        updatedAt: doc.updatedAt.toISOString(),
      };
      // The request's trace context: the events carry it, and the row keeps it when sampled (the sweep's rebuilt events too).
      const trace = currentTraceparent();
      const events = eventsOf(event, dispatch);
      const outcome = await writer.insert(
        storedRow(full, dispatch, trace),
        trace ? events.map((e) => ({ ...e, traceparent: trace })) : events,
      );
      if (outcome === 'inserted') {
        remember(_id, event);
        return { created: true, event };
      }
      const existing = await Model.findById(full._id, hidden).lean();
      if (!existing) throw new Error(`run event ${full._id} reported as a duplicate but not found`);
      const stored = toRunEvent(existing);
      remember(_id, stored);
      return { created: false, event: stored };
    },
    async findById(scope: ProjectScope, id: string): Promise<RunEvent | null> {
      const d = await Model.findById(scopedId(scope, id), hidden).lean();
      return d ? toRunEvent(d) : null;
    },
    /** Most recent non-null userProperties of an anchor (message or conversation). */
    async latestUserProperties(scope: ProjectScope, anchor: 'messageId' | 'conversationId', value: string) {
      const d = await Model.findOne(
        { ...scoped(scope), [anchor]: value, userProperties: { $ne: null } },
        { userProperties: 1 },
      )
        .sort({ createdAt: -1 })
        .lean<Pick<RunEventDoc, 'userProperties'>>();
      return loadedJson(d?.userProperties ?? null);
    },
    /** The events of one conversation, oldest first. */
    async ofConversation(scope: ProjectScope, conversationId: string, limit: number): Promise<RunEvent[]> {
      const rows = await Model.find({ ...scoped(scope), conversationId }, hidden)
        .sort({ createdAt: 1, _id: 1 })
        .limit(limit)
        .lean();
      return rows.map(toRunEvent);
    },
    /** A conversation id recorded for a message, if any event carried both. */
    async conversationOfMessage(scope: ProjectScope, messageId: string): Promise<string | null> {
      const d = await Model.findOne(
        { ...scoped(scope), messageId, conversationId: { $ne: null } },
        { conversationId: 1 },
      ).lean<Pick<RunEventDoc, 'conversationId'>>();
      return d?.conversationId ?? null;
    },
  };
}
