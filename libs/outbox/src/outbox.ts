import type { Model } from 'mongoose';
import type { PendingEvent, StoredPendingEvent } from '@platform/contracts';
import type { Publisher } from '@platform/bus';
import { getLogger } from '@platform/logger';
import { hiddenFields, live, storedEvents } from './fields';
import { groupCommit, type InsertOutcome, type OutboxCollection, type Row } from './group-commit';
import { KeyedLock } from './lock';
import { batchMarkers, eventsOfBatch, markerIdOf } from './markers';
import { embeddedRelay, type OutboxDoc } from './relay';

const log = getLogger('outbox');

export interface OutboxOptions {
  publisher: Publisher;
  /** This process (its batch markers are named after it). */
  instance: string;
  /** How often the sweep runs once started (ms). */
  sweepMs?: number;
  /** A batch marker older than this is taken for orphaned by the sweep (its writer died before publishing; ms). */
  orphanAfterMs?: number;
}

export interface WriterOptions<D> {
  /**
   * The events of a stored row, rebuilt from the row itself: an insert's events are then stored nowhere (the sweep
   * rebuilds them after a crash; storing a copy of each run event cost its insert about a third).
   */
  eventsOf?: (row: D) => StoredPendingEvent[];
  /** Documents per insertMany at most (default 100). */
  maxBatch?: number;
  /** insertMany commands in flight at once (default 2); while they run, the next batch gathers. */
  maxInFlight?: number;
}

/** A document's identity and what else must match for a write to apply (a compare-and-set: `revision`, `live`). */
export type WriteFilter = { _id: string } & Record<string, unknown>;

/** A change of one document, as update operators. */
export interface Change {
  $set?: Record<string, unknown>;
  $unset?: Record<string, 1 | ''>;
  $inc?: Record<string, number>;
}

/**
 * The outbox of one collection. Every write that emits events goes through it, and the events reach JetStream
 * if and only if the write is stored, whatever dies in between:
 * - `insert` is group-committed (the inserts of one moment are one insertMany) with one marker document per batch that
 *   has events; the events are published after the callers are answered, then the marker is deleted.
 * - `update` and `remove` write the events into the changed document in the same atomic write, publish them, then
 *   clear them (a removed document is hidden at once and deleted once its events are out).
 * Writes of one document in this process never overlap (FerretDB rewrites a whole document on update: of two at once,
 * one is lost), so a write that emits nothing goes through `update` too.
 */
export interface OutboxWriter<D extends Row> {
  /** Inserts `doc` as given (whole: no schema defaults are applied); `duplicate` when its `_id` was taken. */
  insert(doc: D, events?: PendingEvent[]): Promise<InsertOutcome>;
  /** Applies `change` where `filter` matches a live document: the document after it, or null (then nothing is written). */
  update(filter: WriteFilter, change: Change, events?: PendingEvent[]): Promise<D | null>;
  /** Removes the live document `filter` matches, once `events` are published: the document as it was, or null. */
  remove(filter: WriteFilter, events?: PendingEvent[], change?: Change): Promise<D | null>;
  /** Filter of the documents not being removed (merge into every read). */
  readonly live: typeof live;
  /** Projection that leaves the outbox's fields out (merge into a read's projection). */
  readonly hidden: typeof hiddenFields;
}

interface Writer<D extends Row> extends OutboxWriter<D> {
  sweep(olderThanMs: number): Promise<number>;
  flush(): Promise<void>;
}

/** The fields the outbox writes into a changed document with its events. */
function withEvents(change: Change, events: StoredPendingEvent[]): Change {
  if (!events.length) return change;
  const entries = Object.fromEntries(events.map((e) => [`pendingEvents.${e.id}`, e]));
  return {
    ...change,
    $set: { ...change.$set, ...entries, outboxPending: true },
    $inc: { ...change.$inc, outboxSeq: 1 },
  };
}

function writerOf<D extends Row>(model: Model<any>, outbox: OutboxOptions, opts: WriterOptions<D>): Writer<D> {
  const collection = () => model.collection as unknown as OutboxCollection;
  const hasOutbox = Boolean(model.schema.path('outboxMarker'));
  const lock = new KeyedLock();
  /** Publishes run one after another, in the order the writes were stored. */
  let publishing: Promise<unknown> = Promise.resolve();
  const inOrder = (events: StoredPendingEvent[]): Promise<void> => {
    const next = publishing.then(() => outbox.publisher.publishPending(events));
    publishing = next.catch(() => undefined);
    return next;
  };
  const markers = batchMarkers<D>(collection, { instance: outbox.instance, eventsOf: opts.eventsOf, deleteMs: 100 });
  const batches = groupCommit<D>(collection, {
    maxBatch: opts.maxBatch ?? 100,
    maxInFlight: opts.maxInFlight ?? 2,
    lead: (batch) => {
      const marker = markers.markerOf(batch);
      return marker ? [marker] : [];
    },
    stored: ([marker], inserted) => {
      if (!marker) return;
      const events = inserted.flatMap((w) => w.events);
      // The marker goes once its events are out; the next batch's publish does not wait for this database write
      // (a marker whose delete fails is swept, its events published again and dropped as repeats by JetStream).
      inOrder(events).then(
        () => markers.published(marker._id),
        (err) =>
          log.warn(
            { err, markerId: marker._id, count: events.length },
            'publishing a batch failed; the sweep will retry',
          ),
      );
    },
  });
  const relay = embeddedRelay(model, {
    lock,
    publish: inOrder,
    // A document removed before its insert's batch was published (that writer may have died): its insert's events go
    // out with its removal, from the marker (JetStream drops them if the batch was published meanwhile).
    unpublishedOf: async (docs) => {
      const found = await markers.find([...new Set(docs.map((d) => markerIdOf(d.outboxBatch!)))]);
      return found.flatMap((m) => eventsOfBatch(m, docs as unknown as D[], opts.eventsOf));
    },
  });
  const needsOutbox = (what: string) => {
    if (!hasOutbox)
      throw new Error(`${model.modelName}: ${what} with events needs the outbox's fields in its schema (outboxFields)`);
  };
  const write = (filter: WriteFilter, change: Change) =>
    lock.run([filter._id], () =>
      model
        .findOneAndUpdate({ ...filter, ...live }, change, { new: true })
        .lean<D & OutboxDoc>()
        .exec(),
    );

  return {
    live,
    hidden: hiddenFields,
    insert(doc, events = []) {
      if (events.length) needsOutbox('an insert');
      // Events rebuilt from the row are not stored: they need no storable form.
      return batches.insert(doc, storedEvents(events, !opts.eventsOf));
    },
    async update(filter, change, events = []) {
      if (events.length) needsOutbox('an update');
      const doc = await write(filter, withEvents(change, storedEvents(events, true)));
      if (doc && events.length) relay.flush(doc);
      return doc;
    },
    async remove(filter, events = [], change = {}) {
      needsOutbox('a removal');
      const hide = withEvents(change, storedEvents(events, true));
      const doc = await write(filter, {
        ...hide,
        $set: { ...hide.$set, outboxDelete: true, outboxPending: true },
        $inc: { ...hide.$inc, outboxSeq: 1 },
      });
      if (doc) relay.flush(doc);
      return doc;
    },
    async sweep(olderThanMs) {
      if (!hasOutbox) return 0;
      const projection = opts.eventsOf
        ? undefined
        : ({ _id: 1, pendingEvents: 1, outboxSeq: 1, outboxDelete: 1, outboxBatch: 1 } as const);
      const relayed = await relay.sweep(projection);
      return relayed + (await markers.sweep(inOrder, olderThanMs));
    },
    async flush() {
      await batches.drain();
      await relay.flushAll();
      await publishing;
      await markers.flush();
    },
  };
}

/**
 * The transactional outbox of one service: made once at start with the publisher and the instance id, it hands each
 * repository the writer of its collection (`of`), sweeps every writer's leftovers at start and on a timer, and
 * publishes what is still waiting at stop. Events are published to JetStream with the event id as Nats-Msg-Id, so a
 * republished event is dropped as a repeat; consumers upsert by id.
 */
export class Outbox {
  private readonly writers = new Map<Model<any>, Writer<any>>();
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<unknown> = Promise.resolve();

  constructor(private readonly opts: OutboxOptions) {}

  /** The writer of `model`'s collection (one per model: its writes share a lock and an order of publishing). */
  of<D extends Row>(model: Model<D>, opts: WriterOptions<D> = {}): OutboxWriter<D> {
    let writer = this.writers.get(model);
    if (!writer) {
      writer = writerOf<D>(model, this.opts, opts);
      this.writers.set(model, writer);
    }
    return writer as Writer<D>;
  }

  /** Publishes what every writer's collection holds unpublished (leftovers of a process that died): how many events or documents. */
  async sweep(olderThanMs = this.opts.orphanAfterMs ?? 10_000): Promise<number> {
    let total = 0;
    for (const w of this.writers.values()) total += await w.sweep(olderThanMs);
    return total;
  }

  /** Sweeps now, then every `sweepMs`. */
  async start(): Promise<void> {
    await this.sweep();
    this.timer = setInterval(() => {
      this.sweeping = this.sweeping
        .then(() => this.sweep())
        .catch((err: unknown) => log.warn({ err }, 'outbox sweep failed'));
    }, this.opts.sweepMs ?? 5_000);
    this.timer.unref();
  }

  /** Waits until every write so far is stored and its events published. */
  async flush(): Promise<void> {
    await Promise.all([...this.writers.values()].map((w) => w.flush()));
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.sweeping;
    await this.flush();
  }
}
