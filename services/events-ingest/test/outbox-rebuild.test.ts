import { randomBytes } from 'node:crypto';
import { ensureStream, platformEventsStream, publisher } from '@platform/bus';
import { connectMongo, type Connection } from '@platform/mongo';
import { randomId } from '@platform/secrets';
import { context, initTracing, trace } from '@platform/telemetry';
import { connectAs, eventually, startNatsServer, testStack, type NatsServer } from '@platform/testkit';
import { runEventRepo } from '../src/data/run-event.repo';
import { runEventEvents } from '../src/domain/run-events';

/**
 * A run event's event.created is not stored in its row: the row keeps what the event needs beyond itself, and the
 * sweep rebuilds the event after a crash between the insert and the publish.
 */
let nats: NatsServer;
let nc: Awaited<ReturnType<typeof connectAs>>;
let db: Connection;
const received: Array<{ id: string; type: string; occurredAt: string; data: { event: { id: string; properties: unknown }; dispatch: boolean } }> = [];
/** The traceparent header of each event.created received, by event id. */
const traceparents = new Map<string, string | undefined>();
/** Every repo a test made: flushed before the database closes, so no marker delete is left to run against a closed client. */
const repos: Array<ReturnType<typeof runEventRepo>> = [];
const repoOf = (...args: Parameters<typeof runEventRepo>) => {
  const repo = runEventRepo(...args);
  repos.push(repo);
  return repo;
};

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connectAs(nats.url, 'admin', { name: 'run-event-outbox-test' });
  await ensureStream(await nc.jetstreamManager(), platformEventsStream);
  nc.subscribe('evt.>', {
    callback: (_e, m) => {
      const event = JSON.parse(new TextDecoder().decode(m.data));
      received.push(event);
      traceparents.set(event.id, m.headers?.get('traceparent') || undefined);
    },
  });
  db = await connectMongo({ url: testStack().env.MONGO_URL!, dbPrefix: 'test', service: `events-ingest-outbox-${randomId(6).toLowerCase()}` });
});
afterAll(async () => {
  await Promise.all(repos.map((r) => r.flush()));
  await db?.db?.dropDatabase();
  await db?.close();
  await nc?.close();
  await nats?.destroy();
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
  const dying = repoOf(db, { publisher: { publish: down, publishPending: down }, instance: 'dying', eventsOf: runEventEvents });
  const stored = [await dying.insertOnce(doc('e1', { plan: 'pro' }), true), await dying.insertOnce(doc('e2', { '$odd.key': 1 }), false)];
  await dying.flush();
  expect(stored.map((s) => s.created)).toEqual([true, true]);
  // what a live writer publishes for these rows
  const expected = stored.map((s, i) => runEventEvents(s.event, i === 0)[0]!);

  const restarted = repoOf(db, { publisher: publisher(nc), instance: 'restarted', eventsOf: runEventEvents });
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

test('when the sweep republishes events, then an event written under a sampled trace keeps that trace and one under an unsampled trace does not', async () => {
  initTracing({ service: 'events-ingest-test' });
  const tenantId = `t-${randomId(6).toLowerCase()}`;
  const now = new Date();
  const doc = (id: string) => ({ id, tenantId, projectId: 'p1', type: 'x', agentId: null, conversationId: null, messageId: null, properties: null, userProperties: null, metadata: null, serverMetadata: { authMethod: 'apiKey' }, createdAt: now, updatedAt: now });
  const under = (traceFlags: number) => trace.setSpanContext(context.active(), { traceId: randomBytes(16).toString('hex'), spanId: randomBytes(8).toString('hex'), traceFlags });
  const down = () => Promise.reject(new Error('NATS is gone'));
  const dying = repoOf(db, { publisher: { publish: down, publishPending: down }, instance: 'dying-traced', eventsOf: runEventEvents });
  const sampledCtx = under(1);
  const unsampledCtx = under(0);
  const [a, b] = [
    await context.with(sampledCtx, () => dying.insertOnce(doc('sampled'), false)),
    await context.with(unsampledCtx, () => dying.insertOnce(doc('unsampled'), false)),
  ];
  await dying.flush();
  const ids = [a, b].map((s) => runEventEvents(s.event, false)[0]!.id);

  const restarted = repoOf(db, { publisher: publisher(nc), instance: 'restarted-traced', eventsOf: runEventEvents });
  await restarted.model.collection.updateMany({ outboxMarker: true, _id: { $regex: /^~outbox~dying-traced:/ } } as never, { $set: { createdAt: new Date(0) } });
  await expect(restarted.sweep()).resolves.toBe(2);
  await eventually(() => ids.every((id) => traceparents.has(id)), 'the two rebuilt event.created messages');
  const sampledTrace = trace.getSpanContext(sampledCtx)!.traceId;
  const unsampledTrace = trace.getSpanContext(unsampledCtx)!.traceId;
  expect(traceparents.get(ids[0]!)).toBe(`00-${sampledTrace}-${trace.getSpanContext(sampledCtx)!.spanId}-01`);
  expect(traceparents.get(ids[1]!) ?? '').not.toContain(unsampledTrace);
});

test('when rows were stored by a release that kept every field apart, then a replay answers each as it was stored and the sweep rebuilds its event.created', async () => {
  const tenantId = `t-${randomId(6).toLowerCase()}`;
  const createdAt = new Date('2026-11-01T10:00:00.000Z');
  const batch = `earlier-${randomId(6).toLowerCase()}:1`;
  const ids = [`${tenantId}:p1:old-1`, `${tenantId}:p1:old-2`];
  // Rows and marker as the release before the packed rows wrote them (its writer died before publishing).
  await db.collection('runEvents').insertMany([
    { _id: `~outbox~${batch}`, outboxMarker: true, createdAt: new Date(0), ids },
    { _id: ids[0], tenantId, projectId: 'p1', type: 'x', agentId: 'agent-1', conversationId: 'c-1', properties: { plan: 'pro' }, userProperties: { id: 'u-1' }, serverMetadata: { authMethod: 'apiKey' }, createdAt, outboxDispatch: true, outboxBatch: batch },
    { _id: ids[1], tenantId, projectId: 'p1', type: 'y', properties: JSON.stringify({ '$odd.key': 1 }), serverMetadata: { authMethod: 'session' }, createdAt, outboxBatch: batch },
  ] as never[]);
  const repo = repoOf(db, { publisher: publisher(nc), instance: 'after-upgrade', eventsOf: runEventEvents });
  const base = { tenantId, projectId: 'p1', agentId: null, conversationId: null, messageId: null, properties: { other: true }, userProperties: null, metadata: null, serverMetadata: { authMethod: 'apiKey' }, createdAt: new Date(), updatedAt: new Date() };
  const replays = [await repo.insertOnce({ ...base, id: 'old-1', type: 'changed' }, false), await repo.insertOnce({ ...base, id: 'old-2', type: 'changed' }, false)];
  const stored = [
    { id: 'old-1', tenantId, projectId: 'p1', type: 'x', agentId: 'agent-1', conversationId: 'c-1', messageId: null, properties: { plan: 'pro' }, userProperties: { id: 'u-1' }, metadata: null, serverMetadata: { authMethod: 'apiKey' }, createdAt: createdAt.toISOString(), updatedAt: createdAt.toISOString() },
    { id: 'old-2', tenantId, projectId: 'p1', type: 'y', agentId: null, conversationId: null, messageId: null, properties: { '$odd.key': 1 }, userProperties: null, metadata: null, serverMetadata: { authMethod: 'session' }, createdAt: createdAt.toISOString(), updatedAt: createdAt.toISOString() },
  ];
  expect(replays).toEqual(stored.map((event) => ({ created: false, event })));

  await expect(repo.sweep()).resolves.toBe(2);
  const expected = stored.map((event, i) => runEventEvents(event, i === 0)[0]!);
  const ours = () => received.filter((m) => expected.some((e) => e.id === m.id));
  await eventually(() => ours().length === 2, 'the two rebuilt event.created messages');
  expect(ours().map((m) => ({ event: m.data.event, dispatch: m.data.dispatch })).sort((a, b) => a.event.id.localeCompare(b.event.id))).toEqual(
    stored.map((event, i) => ({ event, dispatch: i === 0 })),
  );
});
