import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ensureStream, platformEventsStream, publisher } from '@platform/bus';
import {
  appUpdated,
  appDeleted,
  pendingEvent,
  WEBHOOK_JOBS_STREAM,
  webhookJobsSubject,
  type PendingEvent,
  type RunEvent,
} from '@platform/contracts';
import { connectMongo, type Connection } from '../../libs/mongo/src';
import { Outbox } from '../../libs/outbox/src';
import { randomId } from '@platform/secrets';
import { aRunEvent, connectAs, natsEnv, startNatsServer, testStack, type NatsServer } from '@platform/testkit';
import { runEventRepo } from '../../services/events-ingest/src/data/run-event.repo';
import { runEventEvents } from '../../services/events-ingest/src/domain/run-events';
import { appRepo } from '../../services/management/src/data/app.repo';

/**
 * `pnpm migrate` against a real database and NATS: every row form an earlier release wrote and this release no longer
 * reads is planted, the command runs twice, the rows are in today's form after the first run and untouched by the
 * second, and what was waiting to be published is published once: the delivery jobs by the command, the events by the
 * services' outbox afterwards (JetStream keeps one message per id, so the streams tell how often).
 */
const repoRoot = join(__dirname, '../..');
const dbPrefix = `migrate_${randomId(6).toLowerCase()}`;
let nats: NatsServer;
let nc: Awaited<ReturnType<typeof connectAs>>;
const dbs: Record<'events' | 'management' | 'dispatcher', Connection> = {} as never;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connectAs(nats.url, 'admin', { name: 'migrate-test' });
  await ensureStream(await nc.jetstreamManager(), platformEventsStream);
  const connect = (service: string) =>
    connectMongo({ url: testStack().env.MONGO_URL!, dbPrefix, service, poolSize: 2 });
  [dbs.events, dbs.management, dbs.dispatcher] = await Promise.all([
    connect('events-ingest'),
    connect('management'),
    connect('webhook-dispatcher'),
  ]);
}, 60_000);

afterAll(async () => {
  for (const db of Object.values(dbs)) {
    await db?.db?.dropDatabase();
    await db?.close();
  }
  await nc?.close();
  await nats?.destroy();
});

/** `pnpm migrate` as an operator runs it (a child process, so this test's event loop stays free). */
function migrate(): Promise<{ status: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(repoRoot, 'scripts', 'migrate.ts')], {
      cwd: repoRoot,
      timeout: 120_000,
      env: {
        PATH: process.env.PATH,
        MONGO_URL: testStack().env.MONGO_URL,
        MONGO_DB_PREFIX: dbPrefix,
        ...natsEnv(nats.url, 'webhook-dispatcher'),
      },
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, out }));
  });
}

/** How many messages of each id a stream holds. */
async function inStream(stream: string, ids: string[]): Promise<number[]> {
  const jsm = await nc.jetstreamManager();
  const info = await jsm.streams.info(stream);
  const seen = new Map<string, number>();
  for (let seq = info.state.first_seq; info.state.messages > 0 && seq <= info.state.last_seq; seq++) {
    const id = (await jsm.streams.getMessage(stream, { seq }).catch(() => null))?.header.get('Nats-Msg-Id');
    if (id) seen.set(id, (seen.get(id) ?? 0) + 1);
  }
  return ids.map((id) => seen.get(id) ?? 0);
}

const tenantId = `t-${randomId(6).toLowerCase()}`;
const scope = { tenantId, projectId: 'p1' };
const createdAt = new Date('2026-11-01T10:00:00.000Z');
const storedEvent = (id: string, over: Partial<RunEvent> = {}): RunEvent =>
  aRunEvent({
    id,
    ...scope,
    type: 'x',
    serverMetadata: { authMethod: 'apiKey' },
    createdAt: createdAt.toISOString(),
    updatedAt: createdAt.toISOString(),
    ...over,
  });
const rowId = (id: string) => `${tenantId}:p1:${id}`;
/** The event.created a release that stored it in its row had there (same id as the one the row rebuilds). */
const createdOf = (e: RunEvent, dispatch: boolean): PendingEvent => runEventEvents(e, dispatch)[0]!;

test('when rows of earlier releases are migrated twice, then they are converted once, what waited is published once, and the services read them as before', async () => {
  // events-ingest. A batch of the release before the marker listed its rows (its writer died: never published), every field apart.
  const a1 = storedEvent('a-1', {
    agentId: 'agent-1',
    conversationId: 'c-1',
    properties: { plan: 'pro' },
    userProperties: { id: 'u-1' },
  });
  const a2 = storedEvent('a-2', {
    type: 'y',
    properties: { '$odd.key': 1 },
    serverMetadata: { authMethod: 'session' },
  });
  // A batch of the release that stored each event in its row (its writer died too), and a row of the release before
  // group commit still flagged for its relay; a row whose events are long out.
  const b1 = storedEvent('b-1');
  const c1 = storedEvent('c-1', { type: 'z' });
  const d1 = storedEvent('d-1');
  const [b1Event, c1Event] = [createdOf(b1, true), createdOf(c1, false)];
  await dbs.events.collection('runEvents').insertMany([
    { _id: '~outbox~old:1', outboxMarker: true, createdAt: new Date(0) },
    {
      _id: rowId('a-1'),
      tenantId,
      projectId: 'p1',
      type: 'x',
      agentId: 'agent-1',
      conversationId: 'c-1',
      properties: { plan: 'pro' },
      userProperties: { id: 'u-1' },
      serverMetadata: { authMethod: 'apiKey' },
      createdAt,
      outboxDispatch: true,
      outboxBatch: 'old:1',
    },
    {
      _id: rowId('a-2'),
      tenantId,
      projectId: 'p1',
      type: 'y',
      properties: JSON.stringify({ '$odd.key': 1 }),
      serverMetadata: { authMethod: 'session' },
      createdAt,
      outboxBatch: 'old:1',
    },
    { _id: '~outbox~mid:1', outboxMarker: true, createdAt: new Date(0), ids: [rowId('b-1')] },
    {
      _id: rowId('b-1'),
      id: 'b-1',
      tenantId,
      projectId: 'p1',
      type: 'x',
      serverMetadata: { authMethod: 'apiKey' },
      createdAt,
      updatedAt: createdAt,
      pendingEvents: { [b1Event.id]: b1Event },
      outboxBatch: 'mid:1',
    },
    {
      _id: rowId('c-1'),
      id: 'c-1',
      tenantId,
      projectId: 'p1',
      type: 'z',
      serverMetadata: { authMethod: 'apiKey' },
      createdAt,
      updatedAt: createdAt,
      pendingEvents: { [c1Event.id]: c1Event },
      outboxPending: true,
      outboxSeq: 1,
    },
    { _id: rowId('d-1'), tenantId, projectId: 'p1', type: 'x', serverMetadata: { authMethod: 'apiKey' }, createdAt },
  ] as never[]);

  // management. An app at revision 2 and the events of its change to 2 (landed), to 3 (never landed), of the deletion
  // of an app that is gone, and one released but not relayed yet; a key stored before `live`.
  const appId = `app_${randomId(16)}`;
  const goneId = `app_${randomId(16)}`;
  await dbs.management.collection('apps').insertOne({
    _id: appId,
    ...scope,
    name: 'an app',
    type: 'api',
    enabled: true,
    config: { type: 'api' },
    publicKeys: {},
    revision: 2,
    createdAt,
    updatedAt: createdAt,
  } as never);
  const updated = () => pendingEvent(appUpdated, `evt_${randomId(20)}`, scope, { app: { id: appId } });
  const [landed, neverLanded, gone, released] = [
    updated(),
    updated(),
    pendingEvent(appDeleted, `evt_${randomId(20)}`, scope, { id: goneId }),
    updated(),
  ];
  const old = new Date(Date.now() - 60_000);
  await dbs.management.collection('appEvents').insertMany([
    {
      _id: landed.id,
      appId,
      revision: 2,
      held: true,
      createdAt: old,
      pendingEvents: { [landed.id]: landed },
      outboxSeq: 1,
      outboxDelete: true,
    },
    {
      _id: neverLanded.id,
      appId,
      revision: 3,
      held: true,
      createdAt: old,
      pendingEvents: { [neverLanded.id]: neverLanded },
      outboxSeq: 1,
      outboxDelete: true,
    },
    {
      _id: gone.id,
      appId: goneId,
      revision: -1,
      held: true,
      createdAt: old,
      pendingEvents: { [gone.id]: gone },
      outboxSeq: 1,
      outboxDelete: true,
    },
    {
      _id: released.id,
      appId,
      revision: 1,
      createdAt: old,
      pendingEvents: { [released.id]: released },
      outboxPending: true,
      outboxSeq: 1,
      outboxDelete: true,
    },
  ] as never[]);
  const keyId = `pk_${randomId(12)}`;
  await dbs.management.collection('apiKeys').insertOne({
    _id: keyId,
    ...scope,
    agentId: 'a1',
    name: 'k',
    keyPrefix: 'sk_x',
    keyHash: 'h',
    createdAt,
    updatedAt: createdAt,
  } as never);

  // webhook-dispatcher: a delivery still pending in the collection of the releases before the job stream (its
  // partition's name takes a dot, which a subject cannot), and one that was delivered.
  await dbs.dispatcher.collection('deliveries').insertMany([
    {
      _id: 'msg_pending',
      partition: 'eu.1',
      status: 'pending',
      ...scope,
      destinationId: 'd1',
      eventId: 'ev1',
      eventType: 'event.created',
      body: '{}',
      attemptCount: 2,
      nextAttemptAt: createdAt,
      createdAt,
    },
    {
      _id: 'msg_done',
      partition: 'eu.1',
      status: 'delivered',
      ...scope,
      destinationId: 'd1',
      eventId: 'ev2',
      eventType: 'event.created',
      body: '{}',
      attemptCount: 1,
      nextAttemptAt: null,
      createdAt,
    },
  ] as never[]);

  const first = await migrate();
  expect({ status: first.status, out: first.out }).toEqual({
    status: 0,
    out: expect.stringContaining('Every row is in the form this release reads.'),
  });
  expect(first.out).toContain(
    'events-ingest: runEvents batch markers of earlier releases given their rows and events: 2 markers',
  );
  expect(first.out).toContain('events-ingest: runEvents rows of earlier releases packed: 5 rows');
  expect(first.out).toContain(
    'management: appEvents moved into the apps outbox: 3 events moved, 1 of changes that never landed dropped',
  );
  expect(first.out).toContain('management: apiKeys stored before `live` marked live: 1 keys');
  expect(first.out).toContain(
    'webhook-dispatcher: pending deliveries of the deliveries collection handed to the job stream: 1 deliveries',
  );

  const second = await migrate();
  expect(second.status).toBe(0);
  expect(second.out.match(/: [1-9]/g)).toBeNull();

  // The rows: packed, the flagged one still flagged, the markers listing their rows.
  const rows = await dbs.events
    .collection('runEvents')
    .find({ outboxMarker: { $ne: true } })
    .toArray();
  expect(
    rows
      .map((r) => [r._id, typeof r.body, 'id' in r || 'type' in r || 'outboxDispatch' in r || 'updatedAt' in r])
      .sort(),
  ).toEqual(['a-1', 'a-2', 'b-1', 'c-1', 'd-1'].map((id) => [rowId(id), 'string', false]));
  expect(rows.filter((r) => r.outboxPending).map((r) => r._id)).toEqual([rowId('c-1')]);
  expect(await dbs.events.collection('runEvents').find({ outboxMarker: true }).sort({ _id: 1 }).toArray()).toEqual([
    expect.objectContaining({
      _id: '~outbox~mid:1',
      ids: [rowId('b-1')],
      events: [{ row: rowId('b-1'), event: b1Event }],
    }),
    expect.objectContaining({ _id: '~outbox~old:1', ids: expect.arrayContaining([rowId('a-1'), rowId('a-2')]) }),
  ]);
  expect(await dbs.management.collection('appEvents').countDocuments()).toBe(0);
  expect((await dbs.management.collection('apiKeys').findOne({ _id: keyId as never }))?.live).toBe(true);
  expect(
    (await dbs.dispatcher.collection('deliveries').find().sort({ _id: 1 }).toArray()).map((d) => [d._id, d.status]),
  ).toEqual([
    ['msg_done', 'delivered'],
    ['msg_pending', 'handedOver'],
  ]);
  // The job, once, on its partition's subject: the next attempt under the same webhook id, due when it was due.
  const jsm = await nc.jetstreamManager();
  expect((await jsm.streams.info(WEBHOOK_JOBS_STREAM)).state.messages).toBe(1);
  const job = await jsm.streams.getMessage(WEBHOOK_JOBS_STREAM, { seq: 1 });
  expect(job.subject).toBe(webhookJobsSubject('eu_1'));
  expect(job.json()).toMatchObject({ id: 'msg_pending', attempt: 3, dueAt: createdAt.toISOString() });

  // The services afterwards: their outbox's sweep publishes what waited, once; a replay answers the row as stored.
  const outbox = new Outbox({ publisher: publisher(nc), instance: 'after-upgrade' });
  try {
    const events = runEventRepo(dbs.events, outbox, runEventEvents);
    const apps = appRepo(dbs.management, outbox);
    await outbox.sweep(0);
    await outbox.sweep(0);
    const rebuilt = [createdOf(a1, true), createdOf(a2, false)];
    expect(
      await inStream(platformEventsStream.name, [
        ...rebuilt.map((e) => e.id),
        b1Event.id,
        c1Event.id,
        createdOf(d1, false).id,
      ]),
    ).toEqual([1, 1, 1, 1, 0]);
    expect(await inStream(platformEventsStream.name, [landed.id, released.id, gone.id, neverLanded.id])).toEqual([
      1, 1, 1, 0,
    ]);
    const replay = await events.insertOnce(
      { ...a1, type: 'changed', createdAt: new Date(), updatedAt: new Date() },
      false,
    );
    expect(replay).toEqual({ created: false, event: a1 });
    expect(await events.findById(scope, 'a-2')).toEqual(a2);
    expect(await apps.findById(scope, appId)).toMatchObject({ _id: appId, revision: 2 });
    // the gone app's hidden document went with its event
    expect(await dbs.management.collection('apps').countDocuments({ _id: goneId as never })).toBe(0);
  } finally {
    await outbox.stop();
  }
}, 120_000);
