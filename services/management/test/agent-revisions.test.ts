import { ensureStream, platformEventsStream, publisher } from '@platform/bus';
import { connectMongo, type Connection } from '@platform/mongo';
import { outboxRelay, type OutboxRelay } from '@platform/outbox';
import { randomId } from '@platform/secrets';
import { connectAs, eventually, startNatsServer, testStack, type NatsServer } from '@platform/testkit';
import { agentModel } from '../src/data/agent.model';
import { agentRepo } from '../src/data/agent.repo';

/**
 * Agents are stored as insert-only revisions (`<agent>#<n>` is the key, so two writers of revision n+1 cannot both
 * win) and superseded revisions are pruned. A writer that read revision n while others wrote n+1 and n+2 and pruned
 * n+1 must still fail on key n+1: had the prune freed the key, its change would be stored behind n+2 while the caller
 * is told it was stored (seen as an attachment missing after 8 concurrent attaches all answered 201).
 */
let nats: NatsServer;
let nc: Awaited<ReturnType<typeof connectAs>>;
let db: Connection;
let relay: OutboxRelay;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connectAs(nats.url, 'admin', { name: 'agent-revisions-test' });
  await ensureStream(await nc.jetstreamManager(), platformEventsStream);
  db = await connectMongo({ url: testStack().env.MONGO_URL!, dbPrefix: 'test', service: 'management-agent-revisions' });
  relay = outboxRelay(agentModel(db), publisher(nc));
});
afterAll(async () => {
  await relay?.stop();
  await db?.close();
  await nc?.close();
  await nats?.destroy();
});

test('when a writer read a revision whose successor was written and pruned since, then its write is refused (null) and the latest revision keeps every change', async () => {
  const repo = agentRepo(db, relay);
  const scope = { tenantId: `t-${randomId(8).toLowerCase()}`, projectId: 'p1' };
  const now = new Date();
  await repo.insert({ ...scope, id: 'a1', name: 'agent', body: 'v1', skillIds: [], changeId: null, createdAt: now, updatedAt: now }, []);
  const first = (await repo.findById(scope, 'a1'))!;
  const second = (await repo.replaceBody(first, { body: 'v2', skillIds: [], updatedAt: now }, []))!;
  expect(second.revision).toBe(2);
  // a revision is pruned only once the relay has cleared its outbox
  await eventually(async () => (await repo.model.findOne({ ...scope, id: 'a1', revision: 2 }).lean())?.outboxPending !== true, 'revision 2 relayed');
  const third = (await repo.replaceBody(second, { body: 'v3', skillIds: [], updatedAt: now }, []))!;
  expect(third.revision).toBe(3);
  // the third write prunes revision 2 (its events, none here, are out): emptied, its key kept
  await eventually(async () => (await repo.model.findOne({ ...scope, id: 'a1', revision: 2 }).lean())?.body === '', 'revision 2 to be pruned');

  // A writer that read revision 1 before all this now writes "revision 2".
  expect(await repo.replaceBody(first, { body: 'stale', skillIds: [], updatedAt: now }, [])).toBeNull();
  expect((await repo.findById(scope, 'a1'))?.body).toBe('v3');
  expect((await repo.model.findOne({ ...scope, id: 'a1', revision: 2 }).lean())?.body).toBe('');
});
