import type { PendingEvent, ProjectScope, RunEvent } from '@platform/contracts';
import type { Publisher } from '@platform/bus';
import { iso, loadedJson, scoped, scopedId, storedJson, type Connection } from '@platform/mongo';
import { groupInsert, traced } from '@platform/outbox';
import { runEventModel, type RunEventDoc } from './run-event.model';

/** A stored run event (see `storedRow`: fields that are null, and updatedAt, may be absent). */
export function toRunEvent(d: RunEventDoc): RunEvent {
  return {
    // The compact rows keep the id only in `_id` (`<tenant>:<project>:<id>`).
    id: d.id ?? d._id.slice(d.tenantId.length + d.projectId.length + 2),
    tenantId: d.tenantId,
    projectId: d.projectId,
    type: d.type,
    agentId: d.agentId ?? null,
    conversationId: d.conversationId ?? null,
    messageId: d.messageId ?? null,
    properties: loadedJson(d.properties ?? null),
    userProperties: loadedJson(d.userProperties ?? null),
    metadata: loadedJson(d.metadata ?? null),
    serverMetadata: d.serverMetadata,
    createdAt: iso(d.createdAt)!,
    // A run event never changes: its rows since the compact form keep only createdAt.
    updatedAt: iso(d.updatedAt ?? d.createdAt)!,
  };
}

const OPTIONAL_FIELDS = ['agentId', 'conversationId', 'messageId'] as const;
const MAP_FIELDS = ['properties', 'userProperties', 'metadata'] as const;

/** Whether a W3C traceparent (`00-<trace>-<span>-<flags>`) is of a sampled trace, one whose spans are exported. */
const sampled = (traceparent: string) => (Number.parseInt(traceparent.slice(-2), 16) & 1) === 1;

/**
 * A run event as its row: what the event says and nothing that can be told from the rest. The id is kept in `_id`
 * only (`<tenant>:<project>:<id>`). A field that is null is left out (read back as null), so is updatedAt (a run
 * event never changes: it equals createdAt), the dispatch flag when it is false, and the request's trace context
 * unless its trace is sampled (an event republished by the sweep after a crash then starts a trace of its own: there
 * were no exported spans to link it to). Each field not stored is one FerretDB does not convert and PostgreSQL does
 * not store or index, for every event (docs/perf-notes.md, thirteenth round). The user's maps may have keys the
 * database refuses as field names (`$…`, `a.b`): such a map is stored as its JSON text.
 */
function storedRow(e: RunEventDoc, dispatch: boolean, trace: string | undefined): RunEventDoc {
  const row: Partial<RunEventDoc> = { _id: e._id, tenantId: e.tenantId, projectId: e.projectId, type: e.type };
  for (const f of OPTIONAL_FIELDS) if (e[f] != null) row[f] = e[f];
  for (const f of MAP_FIELDS) if (e[f] != null) row[f] = storedJson(e[f]);
  row.serverMetadata = e.serverMetadata;
  row.createdAt = e.createdAt;
  if (dispatch) row.outboxDispatch = true;
  if (trace && sampled(trace)) row.outboxTrace = trace;
  return row as RunEventDoc;
}

const hidden = { pendingEvents: 0, outboxPending: 0, outboxSeq: 0, outboxDelete: 0, outboxBatch: 0, outboxDispatch: 0, outboxTrace: 0 };

export type RunEventRepo = ReturnType<typeof runEventRepo>;

/** Stored events this process wrote or read lately, by `_id` (run events are never changed once stored). */
const RECENT_MAX = 5_000;

export interface RunEventOutbox {
  publisher: Publisher;
  instance: string;
  onPublished?: (n: number) => void;
  /** The events a stored event emits (from its row: at insert, and again by the sweep after a crash). */
  eventsOf(event: RunEvent, dispatch: boolean): PendingEvent[];
}

export function runEventRepo(db: Connection, outbox: RunEventOutbox) {
  const Model = runEventModel(db);
  // A replay (the same id again, typically a client retry seconds later) is answered from here without touching the
  // database: on FerretDB v1 a read by _id scans the whole collection (docs/perf-notes.md). Bounded, oldest dropped first.
  const recent = new Map<string, RunEvent>();
  // Concurrent new events are written together: one unordered insertMany per batch (group commit), with one outbox
  // marker per batch instead of an update per event once its event.created is published. The events are not stored
  // in the rows: after a crash the sweep rebuilds them from the row (same event ids, so JetStream drops repeats).
  const writer = groupInsert<RunEventDoc>(() => Model.collection, {
    // One insert at a time: the next batch gathers while it runs, so batches are larger (about 20 rows instead of 15
    // at full load) and the database's per-statement cost is shared by more events. Section runs of pnpm bench, two
    // alternating pairs (docs/perf-notes.md, tenth round): new events 3,088 and 2,856 req/s against 2,668 and 2,563
    // with two in flight.
    maxInFlight: 1,
    outbox: {
      publisher: outbox.publisher,
      instance: outbox.instance,
      onPublished: outbox.onPublished,
      eventsOf: (d) => outbox.eventsOf(toRunEvent(d), d.outboxDispatch ?? false).map((e) => (d.outboxTrace ? { ...e, traceparent: d.outboxTrace } : e)),
    },
  });
  const remember = (id: string, e: RunEvent) => {
    recent.set(id, e);
    if (recent.size > RECENT_MAX) recent.delete(recent.keys().next().value!);
  };
  return {
    model: Model,
    /** Publishes the events of batches whose writer died before publishing them (at start and on a timer). */
    sweep: () => writer.sweep(),
    /** Waits until the events of every stored batch are published (at shutdown). */
    flush: () => writer.flush(),
    /** Inserts once; when the id exists returns the stored row untouched (`created: false`). */
    async insertOnce(doc: Omit<RunEventDoc, '_id' | 'id'> & { id: string }, dispatch: boolean): Promise<{ created: boolean; event: RunEvent }> {
      const _id = scopedId(doc, doc.id);
      const known = recent.get(_id);
      if (known) return { created: false, event: known };
      const full: RunEventDoc = { _id, ...doc };
      const event = toRunEvent(full);
      const events = traced(outbox.eventsOf(event, dispatch));
      const trace = events[0]?.traceparent;
      const outcome = await writer.insert(storedRow(full, dispatch, trace), events);
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
      const d = await Model.findOne({ ...scoped(scope), [anchor]: value, userProperties: { $ne: null } }, { userProperties: 1 })
        .sort({ createdAt: -1 })
        .lean<Pick<RunEventDoc, 'userProperties'>>();
      return loadedJson(d?.userProperties ?? null);
    },
    /** The events of one conversation, oldest first. */
    async ofConversation(scope: ProjectScope, conversationId: string, limit: number): Promise<RunEvent[]> {
      const rows = await Model.find({ ...scoped(scope), conversationId }, hidden).sort({ createdAt: 1, _id: 1 }).limit(limit).lean();
      return rows.map(toRunEvent);
    },
    /** A conversation id recorded for a message, if any event carried both. */
    async conversationOfMessage(scope: ProjectScope, messageId: string): Promise<string | null> {
      const d = await Model.findOne({ ...scoped(scope), messageId, conversationId: { $ne: null } }, { conversationId: 1 }).lean<Pick<RunEventDoc, 'conversationId'>>();
      return d?.conversationId ?? null;
    },
  };
}
