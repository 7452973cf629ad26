import { ensureStream, platformEventsStream, publisher } from '@platform/bus';
import { appDeleted, appUpdated, pendingEvent } from '@platform/contracts';
import { connectMongo, type Connection } from '@platform/mongo';
import { outboxRelay } from '@platform/outbox';
import { randomId } from '@platform/secrets';
import { connectAs, eventually, startNatsServer, testStack, type NatsServer } from '@platform/testkit';
import { appRepo } from '../src/data/app.repo';
import { appEventModel, type AppDoc } from '../src/data/app.model';

/**
 * Crash paths of the app outbox: events are written held before the change and released after it. A process that
 * dies between the two leaves a held event; the sweep publishes it when the change landed and drops it when not.
 */
let nats: NatsServer;
let nc: Awaited<ReturnType<typeof connectAs>>;
let db: Connection;
const received: Array<{ id: string; type: string }> = [];

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connectAs(nats.url, 'admin', { name: 'app-events-test' });
  await ensureStream(await nc.jetstreamManager(), platformEventsStream);
  nc.subscribe('evt.>', { callback: (_e, m) => received.push(JSON.parse(new TextDecoder().decode(m.data))) });
  db = await connectMongo({ url: testStack().env.MONGO_URL!, dbPrefix: 'test', service: 'management-app-events' });
});
afterAll(async () => {
  await db?.close();
  await nc?.close();
  await nats?.destroy();
});

function anAppDoc(revision = 1): AppDoc {
  const now = new Date();
  return {
    _id: `app_${randomId(16)}`,
    tenantId: `t-${randomId(6).toLowerCase()}`,
    projectId: `p-${randomId(6).toLowerCase()}`,
    name: 'crash test',
    description: null,
    prompt: null,
    type: 'api',
    enabled: true,
    defaultAgentId: null,
    defaultProjectId: null,
    config: { type: 'api' },
    publicKeys: {},
    revision,
    createdAt: now,
    updatedAt: now,
  };
}

describe('app events across a crash', () => {
  test('when the process died after the change but before releasing its event, then the sweep publishes the event; when the change never landed, it drops it', async () => {
    const relay = outboxRelay(appEventModel(db), publisher(nc));
    const repo = appRepo(db, relay);
    try {
      const app = anAppDoc(2);
      await repo.model.create(app);
      const landed = pendingEvent(appUpdated, randomId(24), app, { app: { id: app._id } });
      const neverLanded = pendingEvent(appUpdated, randomId(24), app, { app: { id: app._id } });
      const gone = pendingEvent(appDeleted, randomId(24), app, { id: app._id });
      const old = new Date(Date.now() - 60_000);
      // What `hold` leaves behind when the process dies before `release`: the change to revision 2 landed, the one to 3 did not,
      // and the deletion did not happen either.
      await repo.eventModel.insertMany([
        { _id: landed.id, appId: app._id, revision: 2, held: true, createdAt: old, pendingEvents: { [landed.id]: landed }, outboxSeq: 1, outboxDelete: true },
        { _id: neverLanded.id, appId: app._id, revision: 3, held: true, createdAt: old, pendingEvents: { [neverLanded.id]: neverLanded }, outboxSeq: 1, outboxDelete: true },
        { _id: gone.id, appId: app._id, revision: -1, held: true, createdAt: old, pendingEvents: { [gone.id]: gone }, outboxSeq: 1, outboxDelete: true },
      ]);
      expect(await repo.sweepHeld()).toBe(3);
      await eventually(() => received.some((e) => e.id === landed.id), 'the landed change to be published');
      await eventually(async () => (await repo.eventModel.countDocuments({ _id: { $in: [landed.id, neverLanded.id, gone.id] } })) === 0, 'the outbox to be empty');
      expect(received.filter((e) => e.id === neverLanded.id || e.id === gone.id)).toEqual([]);
    } finally {
      await relay.stop();
    }
  });
});
