import { ensureStream, platformEventsStream, publisher, type Publisher } from '@platform/bus';
import { appDeleted, appUpdated, pendingEvent } from '@platform/contracts';
import { connectMongo, type Connection } from '@platform/mongo';
import { Outbox } from '@platform/outbox';
import { randomId } from '@platform/secrets';
import { connectAs, eventually, startNatsServer, testStack, type NatsServer } from '@platform/testkit';
import { appRepo } from '../src/data/app.repo';
import type { AppDoc } from '../src/data/app.model';

/**
 * Crash paths of the app outbox: a change and its event are one write conditional on the app's revision. A process
 * that dies between the write and the publish leaves the event in the app; the next process's sweep publishes it. A
 * change that loses the race writes nothing, its event neither.
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

const down = () => Promise.reject(new Error('NATS is away'));
const deadPublisher: Publisher = { publish: down, publishPending: down };

describe('app events across a crash', () => {
  test('when the process died after the change but before publishing its event, then the sweep publishes the event; a change that never landed publishes nothing', async () => {
    const dying = new Outbox({ publisher: deadPublisher, instance: 'dying' });
    const next = new Outbox({ publisher: publisher(nc), instance: 'next' });
    try {
      const repo = appRepo(db, dying);
      const app = anAppDoc(1);
      await repo.model.create(app);
      const landed = pendingEvent(appUpdated, randomId(24), app, { app: { id: app._id } });
      const neverLanded = pendingEvent(appUpdated, randomId(24), app, { app: { id: app._id } });
      const gone = pendingEvent(appDeleted, randomId(24), app, { id: app._id });
      // The change to revision 2 lands (its publish fails: the process is about to die); one from revision 1 again
      // loses the race, and so does a deletion of revision 1.
      const saved = await repo.update(app, { set: { name: 'renamed' } }, [landed]);
      expect(saved?.revision).toBe(2);
      expect(await repo.update(app, { set: { name: 'lost' } }, [neverLanded])).toBeNull();
      expect(await repo.remove(app, [gone])).toBe(false);
      await dying.flush();

      appRepo(db, next);
      await next.sweep();
      await eventually(() => received.some((e) => e.id === landed.id), 'the landed change to be published');
      const stored = await repo.model.findById(app._id).lean();
      expect(stored).toMatchObject({ name: 'renamed', revision: 2 });
      expect(stored?.outboxPending).toBeUndefined();
      expect(received.filter((e) => e.id === neverLanded.id || e.id === gone.id)).toEqual([]);
    } finally {
      await Promise.all([dying.stop(), next.stop()]);
    }
  });
});
