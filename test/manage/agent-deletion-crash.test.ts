import {
  aFullAgent,
  anApiKey,
  aProject,
  client,
  eventually,
  projectPath,
  startPrivateStack,
  withDatabase,
  type PrivateStack,
} from '@platform/testkit';

/**
 * A deletion interrupted between its two steps: the tombstone (the agent is gone) is written, and management stops
 * before the agent's triggers and keys are removed. A stack of its own, so management can be killed.
 */
let stack: PrivateStack;

beforeAll(async () => {
  stack = await startPrivateStack({
    name: 'agentdel',
    services: ['management', 'run-auth', 'events-ingest'],
    env: { NATS_REQUEST_TIMEOUT_MS: '3000' },
  });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
});

test("when management stops after an agent's tombstone is written and before its triggers and keys are removed, then it finishes the deletion when it starts again", async () => {
  const admin = stack.admin;
  const p = aProject();
  const pa = `${projectPath(p)}/agents/doomed`;
  expect((await admin.post(`${projectPath(p)}/agent`, aFullAgent({ id: 'doomed' }))).status).toBe(201);
  expect((await admin.post(`${pa}/triggers`, { id: 'nightly', name: 'Nightly' })).status).toBe(201);
  const { key, apiKey } = await anApiKey(admin, p, { agentId: 'doomed' });
  const run = client(stack.gatewayUrl, key);
  expect((await run.post('/run/v1/events', { type: 'before.crash' })).status).toBe(201);
  const revision = Number((await admin.get(pa)).headers.get('etag')!.replace(/"/g, ''));

  // The state DELETE PA leaves when the process dies right after its first write: the tombstone, cascade pending.
  await stack.kill(stack.process('management'), 'SIGKILL');
  const now = new Date();
  await withDatabase(
    stack.env.MONGO_URL!,
    'management',
    (db) =>
      db.collection('agentRevisions').insertOne({
        _id: `${p.tenantId}:${p.projectId}:doomed#${revision + 1}` as never,
        id: 'doomed',
        tenantId: p.tenantId,
        projectId: p.projectId,
        name: 'Support bot',
        body: '{}',
        skillIds: [],
        revision: revision + 1,
        changeId: null,
        createdAt: now,
        updatedAt: now,
        deleted: true,
        cascadePending: true,
      }),
    stack.dbPrefix,
  );
  await stack.startProcess('management');

  expect((await admin.get(pa)).status).toBe(404);
  expect((await admin.get(`${pa}/triggers/nightly`)).status).toBe(404);
  expect((await admin.get(`${projectPath(p)}/api-keys/${apiKey.id}`)).status).toBe(404);
  await eventually(
    async () => (await run.post('/run/v1/events', { type: 'after.crash' })).status === 401,
    'the key of the deleted agent refused',
  );
  const left = await withDatabase(
    stack.env.MONGO_URL!,
    'management',
    (db) => db.collection('agentRevisions').countDocuments({ tenantId: p.tenantId, cascadePending: true }),
    stack.dbPrefix,
  );
  expect(left).toBe(0);
}, 120_000);
