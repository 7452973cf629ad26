import { randomUUID } from 'node:crypto';
import mongoose from 'mongoose';
import { ensureStream, publisher } from '@platform/bus';
import { eventCreated, eventSubject, pendingEvent, type PendingEvent } from '@platform/contracts';
import { connectAs, ensureInfra, startNatsServer, type NatsServer } from '@platform/testkit';
import { groupInsert, type GroupCollection } from '../src';

type Row = { _id: string; n: number; pendingEvents?: Record<string, PendingEvent>; outboxBatch?: string };

const scope = { tenantId: `t-${randomUUID()}`, projectId: 'p1' };
const subject = eventSubject(eventCreated, scope.tenantId, scope.projectId);
let nats: NatsServer;
let nc: Awaited<ReturnType<typeof connectAs>>;
let conn: mongoose.Connection;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connectAs(nats.url, 'admin', { name: 'outbox-test', maxReconnectAttempts: 0 });
  await ensureStream(await nc.jetstreamManager(), { name: 'OUTBOX_TEST', subjects: [subject] });
  conn = mongoose.createConnection(ensureInfra().MONGO_URL, { dbName: `outbox_test_${process.pid}_${Date.now()}`, maxPoolSize: 4 });
  await conn.asPromise();
});

afterAll(async () => {
  await conn?.db?.dropDatabase();
  await conn?.close();
  await nc?.close();
  await nats?.destroy();
});

test('when more documents are queued than the batches in flight take, then flush returns once every one is stored and its event published', async () => {
  const collection = conn.db!.collection<Row>('rows');
  const writer = groupInsert<Row>(() => collection as unknown as GroupCollection, {
    maxBatch: 2,
    maxInFlight: 1,
    outbox: { publisher: publisher(nc), instance: 'i1' },
  });
  const rows: Row[] = Array.from({ length: 7 }, (_, n) => {
    const id = `${scope.tenantId}:${scope.projectId}:r${n}`;
    return { _id: id, n, pendingEvents: { [`evt_${n}`]: pendingEvent(eventCreated, `evt_${n}`, scope, { n }) } };
  });
  const outcomes = Promise.all(rows.map((r) => writer.insert(r)));
  // A copy of a row already queued is sent once and learns it was a duplicate.
  const copy = writer.insert({ ...rows[0]!, pendingEvents: {} });

  await writer.flush();

  expect(writer.pending).toBe(0);
  await expect(outcomes).resolves.toEqual(rows.map(() => 'inserted'));
  await expect(copy).resolves.toBe('duplicate');
  expect((await collection.find({ outboxMarker: { $exists: false } }).toArray()).map((r) => r.n).sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
  expect(await collection.countDocuments({ outboxMarker: true })).toBe(0);
  const stream = await (await nc.jetstreamManager()).streams.info('OUTBOX_TEST');
  expect(stream.state.messages).toBe(7);
});

test('when nothing was inserted, then flush returns at once', async () => {
  const writer = groupInsert<Row>(() => conn.db!.collection<Row>('empty') as unknown as GroupCollection);
  await expect(writer.flush()).resolves.toBeUndefined();
});

test('when a batch was stored but its events never published (its writer died), then the sweep publishes them once and removes the marker, also a marker of an earlier release', async () => {
  const collection = conn.db!.collection<Row>('swept');
  const jsm = await nc.jetstreamManager();
  const before = (await jsm.streams.info('OUTBOX_TEST')).state.messages;
  const row = (n: number): Row => {
    const id = `${scope.tenantId}:${scope.projectId}:s${n}`;
    return { _id: id, n, pendingEvents: { [`evt_s${n}`]: pendingEvent(eventCreated, `evt_s${n}`, scope, { n }) } };
  };
  // The dying writer: its rows are stored, its publish never happens.
  const dead = groupInsert<Row>(() => collection as unknown as GroupCollection, {
    outbox: { publisher: { publish: () => Promise.reject(new Error('down')), publishPending: () => Promise.reject(new Error('down')) }, instance: 'dead' },
  });
  await expect(Promise.all([0, 1, 2].map((n) => dead.insert(row(n))))).resolves.toEqual(['inserted', 'inserted', 'inserted']);
  await dead.flush();
  expect(await collection.countDocuments({ outboxMarker: true })).toBe(1);
  // A marker as earlier releases wrote it: no list of ids, its rows found by their batch id.
  await collection.insertOne({ _id: '~outbox~old:1', outboxMarker: true, createdAt: new Date(0) } as never);
  await collection.insertOne({ ...row(3), outboxBatch: 'old:1' });

  const sweeper = groupInsert<Row>(() => collection as unknown as GroupCollection, { outbox: { publisher: publisher(nc), instance: 'live' } });
  await expect(sweeper.sweep(0)).resolves.toBe(4);
  await expect(sweeper.sweep(0)).resolves.toBe(0);

  expect(await collection.countDocuments({ outboxMarker: true })).toBe(0);
  expect((await jsm.streams.info('OUTBOX_TEST')).state.messages - before).toBe(4);
});
