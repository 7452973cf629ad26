import { randomUUID } from 'node:crypto';
import mongoose from 'mongoose';
import { ensureStream, publisher, type Publisher } from '@platform/bus';
import { eventCreated, eventSubject, pendingEvent, type PendingEvent } from '@platform/contracts';
import { connectAs, ensureInfra, eventually, startNatsServer, type NatsServer } from '@platform/testkit';
import { Outbox, outboxFields } from '../src';

/**
 * The outbox against a real database and JetStream: what reaches the stream is what a user's consumer sees. The stream
 * keeps every message it accepted (JetStream drops a second publish of an event id), so its ids tell what was published
 * and how often.
 */
interface Row {
  _id: string;
  n: number;
  revision?: number;
  outboxPending?: boolean;
}

const STREAM = 'OUTBOX_TEST';
const scope = { tenantId: `t-${randomUUID()}`, projectId: 'p1' };
const subject = eventSubject(eventCreated, scope.tenantId, scope.projectId);
let nats: NatsServer;
let nc: Awaited<ReturnType<typeof connectAs>>;
let conn: mongoose.Connection;
let live: Publisher;
/** A publisher whose NATS is away: writes are stored, their events are not published (a crash in between). */
const down = () => Promise.reject(new Error('NATS is away'));
const deadPublisher: Publisher = { publish: down, publishPending: down };
const outboxes: Outbox[] = [];

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connectAs(nats.url, 'admin', { name: 'outbox-test', maxReconnectAttempts: 0 });
  await ensureStream(await nc.jetstreamManager(), { name: STREAM, subjects: [subject] });
  live = publisher(nc);
  conn = mongoose.createConnection(ensureInfra().MONGO_URL, {
    dbName: `outbox_test_${process.pid}_${Date.now()}`,
    maxPoolSize: 4,
  });
  await conn.asPromise();
});

afterAll(async () => {
  await Promise.all(outboxes.map((o) => o.stop()));
  await conn?.db?.dropDatabase();
  await conn?.close();
  await nc?.close();
  await nats?.destroy();
});

let models = 0;
/** A model of a collection of its own, with the outbox's fields. */
function aModel() {
  const name = `Row${++models}`;
  return conn.model<Row>(
    name,
    new mongoose.Schema(
      { _id: String, n: Number, revision: Number, ...outboxFields },
      { collection: `rows${models}`, versionKey: false },
    ),
  );
}

function anOutbox(pub: Publisher, instance = randomUUID().slice(0, 8)): Outbox {
  const o = new Outbox({ publisher: pub, instance });
  outboxes.push(o);
  return o;
}

const anEvent = (): PendingEvent => pendingEvent(eventCreated, `evt_${randomUUID()}`, scope, { n: 1 });

/** How many times each of `ids` is in the stream. */
async function published(ids: string[]): Promise<number[]> {
  const jsm = await nc.jetstreamManager();
  const seen = new Map<string, number>();
  const info = await jsm.streams.info(STREAM);
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
    const m = await jsm.streams.getMessage(STREAM, { seq }).catch(() => null);
    const id = m?.header.get('Nats-Msg-Id');
    if (id) seen.set(id, (seen.get(id) ?? 0) + 1);
  }
  return ids.map((id) => seen.get(id) ?? 0);
}

test('when documents are inserted together, then each is stored once, its events are published once, and no marker is left', async () => {
  const Rows = aModel();
  const outbox = anOutbox(live);
  const rows = outbox.of(Rows, { maxBatch: 2, maxInFlight: 1 });
  const events = Array.from({ length: 7 }, anEvent);
  const outcomes = Promise.all(events.map((e, n) => rows.insert({ _id: `r${n}`, n }, [e])));
  // A copy of a document already queued is sent once and learns it was a duplicate; its event is not published.
  const copyEvent = anEvent();
  const copy = rows.insert({ _id: 'r0', n: 99 }, [copyEvent]);

  await outbox.flush();

  await expect(outcomes).resolves.toEqual(events.map(() => 'inserted'));
  await expect(copy).resolves.toBe('duplicate');
  expect((await Rows.find({ outboxMarker: { $ne: true } }).lean()).map((r) => r.n).sort()).toEqual([
    0, 1, 2, 3, 4, 5, 6,
  ]);
  expect(await Rows.countDocuments({ outboxMarker: true })).toBe(0);
  expect(await published([...events.map((e) => e.id), copyEvent.id])).toEqual([1, 1, 1, 1, 1, 1, 1, 0]);
});

test('when an id is inserted again later, then it answers duplicate, the stored document stays, and only the first insert publishes', async () => {
  const Rows = aModel();
  const outbox = anOutbox(live);
  const rows = outbox.of(Rows);
  const [first, again] = [anEvent(), anEvent()];
  await expect(rows.insert({ _id: 'a', n: 1 }, [first])).resolves.toBe('inserted');
  await expect(rows.insert({ _id: 'a', n: 2 }, [again])).resolves.toBe('duplicate');
  await outbox.flush();
  expect((await Rows.findById('a').lean())?.n).toBe(1);
  expect(await published([first.id, again.id])).toEqual([1, 0]);
});

test('when the process dies between the insert and the publish, then the sweep of the next one publishes the events once', async () => {
  const Rows = aModel();
  const dying = anOutbox(deadPublisher, 'dying');
  const events = [anEvent(), anEvent(), anEvent()];
  await expect(Promise.all(events.map((e, n) => dying.of(Rows).insert({ _id: `s${n}`, n }, [e])))).resolves.toEqual([
    'inserted',
    'inserted',
    'inserted',
  ]);
  await dying.flush();
  expect(await Rows.countDocuments({ outboxMarker: true })).toBe(1);
  expect(await published(events.map((e) => e.id))).toEqual([0, 0, 0]);

  const next = anOutbox(live, 'next');
  next.of(Rows);
  // A marker younger than the sweep's grace may belong to a live writer about to publish it: left alone.
  await expect(next.sweep()).resolves.toBe(0);
  await expect(next.sweep(0)).resolves.toBe(3);
  await expect(next.sweep(0)).resolves.toBe(0);

  expect(await Rows.countDocuments({ outboxMarker: true })).toBe(0);
  expect(await published(events.map((e) => e.id))).toEqual([1, 1, 1]);
});

test('when a document is updated or removed with events, then they are published once and cleared, and the removed one is gone', async () => {
  const Rows = aModel();
  const outbox = anOutbox(live);
  const rows = outbox.of(Rows);
  await rows.insert({ _id: 'u', n: 1, revision: 1 });
  await rows.insert({ _id: 'd', n: 1, revision: 1 });
  const [updated, removed] = [anEvent(), anEvent()];

  const after = await rows.update({ _id: 'u', revision: 1 }, { $set: { n: 2, revision: 2 } }, [updated]);
  expect(after).toMatchObject({ _id: 'u', n: 2, revision: 2 });
  expect(await rows.remove({ _id: 'd' }, [removed])).toMatchObject({ _id: 'd' });
  // Hidden at once: a read that filters on `live` no longer sees it.
  expect(await Rows.findOne({ _id: 'd', ...rows.live }).lean()).toBeNull();
  await outbox.flush();

  expect(await published([updated.id, removed.id])).toEqual([1, 1]);
  const stored = await Rows.findById('u').lean();
  expect(stored).toMatchObject({ n: 2 });
  expect(stored).not.toHaveProperty('pendingEvents');
  expect(stored).not.toHaveProperty('outboxPending');
  expect(await Rows.findById('d').lean()).toBeNull();
});

test('when an update does not match (a compare-and-set that lost), then it answers null and writes nothing, its events neither', async () => {
  const Rows = aModel();
  const outbox = anOutbox(live);
  const rows = outbox.of(Rows);
  await rows.insert({ _id: 'c', n: 1, revision: 2 });
  const lost = anEvent();
  await expect(rows.update({ _id: 'c', revision: 1 }, { $set: { n: 9, revision: 2 } }, [lost])).resolves.toBeNull();
  await expect(rows.remove({ _id: 'c', revision: 1 }, [lost])).resolves.toBeNull();
  await outbox.flush();
  expect(await Rows.findById('c').lean()).toEqual({ _id: 'c', n: 1, revision: 2 });
  expect(await published([lost.id])).toEqual([0]);
});

test('when the process dies after an update and before its publish, then the sweep publishes the event and clears it', async () => {
  const Rows = aModel();
  await anOutbox(live).of(Rows).insert({ _id: 'x', n: 1 });
  const event = anEvent();
  const dying = anOutbox(deadPublisher);
  await dying.of(Rows).update({ _id: 'x' }, { $set: { n: 2 } }, [event]);
  await dying.flush();
  expect((await Rows.findById('x').lean())?.outboxPending).toBe(true);

  const next = anOutbox(live);
  next.of(Rows);
  await expect(next.sweep()).resolves.toBe(1);
  expect(await published([event.id])).toEqual([1]);
  expect(await Rows.findById('x').lean()).toEqual({ _id: 'x', n: 2, outboxSeq: 1 });
});

test('when a document is updated and cleared before its insert was published, then the insert events are not lost', async () => {
  const Rows = aModel();
  // The insert's writer dies before publishing; another process updates the document and clears the update's events.
  const dying = anOutbox(deadPublisher);
  const [created, changed, gone] = [anEvent(), anEvent(), anEvent()];
  await dying.of(Rows).insert({ _id: 'k', n: 1 }, [created]);
  await dying.of(Rows).insert({ _id: 'r', n: 1 }, [gone]);
  await dying.flush();
  const other = anOutbox(live);
  await other.of(Rows).update({ _id: 'k' }, { $set: { n: 2 } }, [changed]);
  await other.flush();
  expect(await published([changed.id, created.id])).toEqual([1, 0]);

  // The insert's events wait in its batch's marker, not in the document the update cleared: the sweep finds them.
  await expect(other.sweep(0)).resolves.toBe(2);
  expect(await published([created.id, gone.id])).toEqual([1, 1]);
});

test('when a document is removed before its insert was published, then its insert events go out with the removal', async () => {
  const Rows = aModel();
  const dying = anOutbox(deadPublisher);
  const [created, removed] = [anEvent(), anEvent()];
  await dying.of(Rows).insert({ _id: 'z', n: 1 }, [created]);
  await dying.flush();
  const other = anOutbox(live);
  await other.of(Rows).remove({ _id: 'z' }, [removed]);
  await other.flush();
  expect(await Rows.findById('z').lean()).toBeNull();
  expect(await published([created.id, removed.id])).toEqual([1, 1]);
});

test('when a document is removed just after its insert was published, then a subscriber sees each event once', async () => {
  const Rows = aModel();
  const rows = anOutbox(live).of(Rows);
  const seen: string[] = [];
  const sub = nc.subscribe(subject, { callback: (_err, m) => seen.push(m.headers?.get('Nats-Msg-Id') ?? '') });
  await nc.flush();
  const [created, removed] = [anEvent(), anEvent()];
  await rows.insert({ _id: 'w', n: 1 }, [created]);
  // Published, its batch marker not deleted yet (markers of a moment are deleted together, a little later).
  await eventually(async () => (await published([created.id]))[0] === 1, 'the insert event in the stream', 15_000, 5);
  await rows.remove({ _id: 'w' }, [removed]);
  await eventually(async () => (await published([removed.id]))[0] === 1, 'the removal event in the stream');
  await nc.flush();
  sub.unsubscribe();
  expect(seen.filter((id) => id === created.id || id === removed.id)).toEqual([created.id, removed.id]);
});

test('when the sweep runs while an update is being published, then it leaves that document to its writer', async () => {
  const Rows = aModel();
  await anOutbox(live).of(Rows).insert({ _id: 's', n: 1 });
  let release = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let publishing = () => {};
  const started = new Promise<void>((resolve) => {
    publishing = resolve;
  });
  // A publisher that is slow for this document's event: the sweep starts while it is under way.
  const slow: Publisher = {
    publish: (...a) => live.publish(...a),
    publishPending: async (events) => {
      publishing();
      await held;
      return live.publishPending(events);
    },
  };
  const outbox = anOutbox(slow);
  const seen: string[] = [];
  const sub = nc.subscribe(subject, { callback: (_err, m) => seen.push(m.headers?.get('Nats-Msg-Id') ?? '') });
  await nc.flush();
  const changed = anEvent();
  await outbox.of(Rows).update({ _id: 's' }, { $set: { n: 2 } }, [changed]);
  await started;
  const swept = outbox.sweep(0);
  release();
  await expect(swept).resolves.toBe(0);
  await outbox.flush();
  await nc.flush();
  sub.unsubscribe();
  expect(seen.filter((id) => id === changed.id)).toEqual([changed.id]);
  expect((await Rows.findById('s').lean())?.outboxPending).toBeUndefined();
});

test('when a writer has nothing queued, then flush returns at once', async () => {
  await expect(anOutbox(live).flush()).resolves.toBeUndefined();
});
