import { connectNats, ensureStream, platformEventsStream, publisher } from '@platform/bus';
import { connectMongo, type Connection } from '@platform/mongo';
import { randomId } from '@platform/secrets';
import { eventually, removeNatsStore, startNatsServer, testStack, type NatsServer } from '@platform/testkit';
import { runEventRepo } from '../src/data/run-event.repo';
import { runEventEvents } from '../src/domain/run-events';

/**
 * A run event's event.created is not stored in its row: the row keeps what the event needs beyond itself, and the
 * sweep rebuilds the event after a crash between the insert and the publish.
 */
let nats: NatsServer;
let nc: Awaited<ReturnType<typeof connectNats>>;
let db: Connection;
const received: Array<{ id: string; type: string; occurredAt: string; data: { event: { id: string; properties: unknown }; dispatch: boolean } }> = [];

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connectNats({ url: nats.url, name: 'run-event-outbox-test' });
  await ensureStream(await nc.jetstreamManager(), platformEventsStream);
  nc.subscribe('evt.>', { callback: (_e, m) => received.push(JSON.parse(new TextDecoder().decode(m.data))) });
  db = await connectMongo({ url: testStack().env.MONGO_URL!, dbPrefix: 'test', service: `events-ingest-outbox-${randomId(6).toLowerCase()}` });
});
afterAll(async () => {
  await db?.db?.dropDatabase();
  await db?.close();
  await nc?.close();
  await nats?.stop();
  if (nats) removeNatsStore(nats);
});

test('when events-ingest dies after storing events and before publishing them, then the sweep publishes the same event.created messages a live writer would have', async () => {
  const tenantId = `t-${randomId(6).toLowerCase()}`;
  const scope = { tenantId, projectId: 'p1' };
  const now = new Date();
  const doc = (id: string, properties: Record<string, unknown>) => ({
    id,
    ...scope,
    type: 'x',
    agentId: 'agent-1',
    conversationId: null,
    messageId: null,
    properties,
    userProperties: null,
    metadata: null,
    serverMetadata: { authMethod: 'apiKey' },
    createdAt: now,
    updatedAt: now,
  });
  const down = () => Promise.reject(new Error('NATS is gone'));
  const dying = runEventRepo(db, { publisher: { publish: down, publishPending: down }, instance: 'dying', eventsOf: runEventEvents });
  const stored = [await dying.insertOnce(doc('e1', { plan: 'pro' }), true), await dying.insertOnce(doc('e2', { '$odd.key': 1 }), false)];
  await dying.flush();
  expect(stored.map((s) => s.created)).toEqual([true, true]);
  // what a live writer publishes for these rows
  const expected = stored.map((s, i) => runEventEvents(s.event, i === 0)[0]!);

  const restarted = runEventRepo(db, { publisher: publisher(nc), instance: 'restarted', eventsOf: runEventEvents });
  await expect(restarted.sweep()).resolves.toBe(0); // the batch is younger than the sweep's grace
  const raw = await restarted.model.collection.find({ tenantId }).toArray();
  expect(raw.some((r) => 'pendingEvents' in r)).toBe(false);
  // once the batch is old enough to be an orphan
  await restarted.model.collection.updateMany({ outboxMarker: true, _id: { $regex: /^~outbox~dying:/ } } as never, { $set: { createdAt: new Date(0) } });
  await expect(restarted.sweep()).resolves.toBe(2);

  const ours = () => received.filter((m) => expected.some((e) => e.id === m.id));
  await eventually(() => ours().length === 2, 'the two rebuilt event.created messages');
  const mine = ours();
  expect(mine.map((m) => ({ id: m.id, occurredAt: m.occurredAt, event: m.data.event, dispatch: m.data.dispatch })).sort((a, b) => a.id.localeCompare(b.id))).toEqual(
    expected
      .map((e) => ({ id: e.id, occurredAt: e.envelope.occurredAt, event: (e.envelope.data as { event: unknown }).event, dispatch: (e.envelope.data as { dispatch: boolean }).dispatch }))
      .sort((a, b) => a.id.localeCompare(b.id)),
  );
});
