import { randomBytes } from 'node:crypto';
import { ensureStream, platformEventsStream, publisher, type Publisher } from '@platform/bus';
import { connectMongo, type Connection } from '@platform/mongo';
import { Outbox } from '@platform/outbox';
import { randomId } from '@platform/secrets';
import { context, initTracing, trace } from '@platform/telemetry';
import { aRunEvent, connectAs, eventually, startNatsServer, testStack, type NatsServer } from '@platform/testkit';
import { runEventRepo } from '../src/data/run-event.repo';
import { runEventEvents } from '../src/domain/run-events';

/**
 * A run event's event.created is not stored in its row: the row keeps what the event needs beyond itself, and the
 * sweep rebuilds the event after a crash between the insert and the publish.
 */
let nats: NatsServer;
let nc: Awaited<ReturnType<typeof connectAs>>;
let db: Connection;
const received: Array<{
  id: string;
  type: string;
  occurredAt: string;
  data: { event: { id: string; properties: unknown }; dispatch: boolean };
}> = [];
/** The traceparent header of each event.created received, by event id. */
const traceparents = new Map<string, string | undefined>();
/** Every outbox a test made: flushed before the database closes, so no marker delete is left to run against a closed client. */
const outboxes: Outbox[] = [];
/** The repository as a process with this publisher has it (its own outbox, named `instance`). */
const repoOf = (publisher: Publisher, instance: string) => {
  const outbox = new Outbox({ publisher, instance });
  outboxes.push(outbox);
  return { outbox, repo: runEventRepo(db, outbox, runEventEvents) };
};
const down = () => Promise.reject(new Error('NATS is gone'));
const deadPublisher: Publisher = { publish: down, publishPending: down };

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
  db = await connectMongo({
    url: testStack().env.MONGO_URL!,
    dbPrefix: 'test',
    service: `events-ingest-outbox-${randomId(6).toLowerCase()}`,
  });
});
afterAll(async () => {
  await Promise.all(outboxes.map((o) => o.flush()));
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
  const dying = repoOf(deadPublisher, 'dying');
  const stored = [
    await dying.repo.insertOnce(doc('e1', { plan: 'pro' }), true),
    await dying.repo.insertOnce(doc('e2', { '$odd.key': 1 }), false),
  ];
  await dying.outbox.flush();
  expect(stored.map((s) => s.created)).toEqual([true, true]);
  // what a live writer publishes for these rows
  const expected = stored.map((s, i) => runEventEvents(s.event, i === 0)[0]!);

  const restarted = repoOf(publisher(nc), 'restarted');
  await expect(restarted.outbox.sweep()).resolves.toBe(0); // the batch is younger than the sweep's grace
  const raw = await restarted.repo.model.collection.find({ tenantId }).toArray();
  expect(raw.some((r) => 'pendingEvents' in r)).toBe(false);
  // once the batch is old enough to be an orphan
  await restarted.repo.model.collection.updateMany(
    { outboxMarker: true, _id: { $regex: /^~outbox~dying:/ } } as never,
    { $set: { createdAt: new Date(0) } },
  );
  await expect(restarted.outbox.sweep()).resolves.toBe(2);

  const ours = () => received.filter((m) => expected.some((e) => e.id === m.id));
  await eventually(() => ours().length === 2, 'the two rebuilt event.created messages');
  const mine = ours();
  expect(
    mine
      .map((m) => ({ id: m.id, occurredAt: m.occurredAt, event: m.data.event, dispatch: m.data.dispatch }))
      .sort((a, b) => a.id.localeCompare(b.id)),
  ).toEqual(
    expected
      .map((e) => ({
        id: e.id,
        occurredAt: e.envelope.occurredAt,
        event: (e.envelope.data as { event: unknown }).event,
        dispatch: (e.envelope.data as { dispatch: boolean }).dispatch,
      }))
      .sort((a, b) => a.id.localeCompare(b.id)),
  );
});

test('when the sweep republishes events, then an event written under a sampled trace keeps that trace and one under an unsampled trace does not', async () => {
  initTracing({ service: 'events-ingest-test' });
  const tenantId = `t-${randomId(6).toLowerCase()}`;
  const now = new Date();
  const doc = (id: string) => ({
    ...aRunEvent({ id, tenantId, projectId: 'p1', type: 'x', serverMetadata: { authMethod: 'apiKey' } }),
    createdAt: now,
    updatedAt: now,
  });
  const under = (traceFlags: number) =>
    trace.setSpanContext(context.active(), {
      traceId: randomBytes(16).toString('hex'),
      spanId: randomBytes(8).toString('hex'),
      traceFlags,
    });
  const dying = repoOf(deadPublisher, 'dying-traced');
  const sampledCtx = under(1);
  const unsampledCtx = under(0);
  const [a, b] = [
    await context.with(sampledCtx, () => dying.repo.insertOnce(doc('sampled'), false)),
    await context.with(unsampledCtx, () => dying.repo.insertOnce(doc('unsampled'), false)),
  ];
  await dying.outbox.flush();
  const ids = [a, b].map((s) => runEventEvents(s.event, false)[0]!.id);

  const restarted = repoOf(publisher(nc), 'restarted-traced');
  await restarted.repo.model.collection.updateMany(
    { outboxMarker: true, _id: { $regex: /^~outbox~dying-traced:/ } } as never,
    { $set: { createdAt: new Date(0) } },
  );
  await expect(restarted.outbox.sweep()).resolves.toBe(2);
  await eventually(() => ids.every((id) => traceparents.has(id)), 'the two rebuilt event.created messages');
  const sampledTrace = trace.getSpanContext(sampledCtx)!.traceId;
  const unsampledTrace = trace.getSpanContext(unsampledCtx)!.traceId;
  expect(traceparents.get(ids[0]!)).toBe(`00-${sampledTrace}-${trace.getSpanContext(sampledCtx)!.spanId}-01`);
  expect(traceparents.get(ids[1]!) ?? '').not.toContain(unsampledTrace);
});
