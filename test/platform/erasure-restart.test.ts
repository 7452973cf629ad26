import { aProject, anApiKey, client, eventually, projectPath, startGatewayProcess, startPrivateStack, type PrivateStack } from '@platform/testkit';
import { expectProblem } from '../support/expect-problem';

/**
 * A stack of its own with the services that hold conversation data (not webhook-dispatcher, chatapp or
 * credential-gateway), so evals can be stopped and started, and a project erasure stays under way (the services that
 * are not running never report their part).
 */
let stack: PrivateStack;

beforeAll(async () => {
  stack = await startPrivateStack({ name: 'erasure', services: ['management', 'run-auth', 'events-ingest', 'analytics', 'evals'], env: { ANALYTICS_PORT: '0' } });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
});

const erasureOf = async (p: { tenantId: string; projectId: string }, id: string) => (await stack.admin.get(`${projectPath(p)}/erasures/${id}`)).body.data;
const stateOf = (job: { services: Array<{ service: string; state: string }> }) => Object.fromEntries(job.services.map((s) => [s.service, s.state]));

test('when evals is down during a conversation erasure, then the erasure waits for it and completes once it is back', async () => {
  const admin = stack.admin;
  const p = aProject();
  const run = client(stack.gatewayUrl, (await anApiKey(admin, p)).key);
  expect((await run.post('/run/v1/events', { id: 'ev-1', type: 'message', conversationId: 'c-1' })).status).toBe(201);
  expect((await admin.post(`${projectPath(p)}/feedback`, { conversationId: 'c-1', type: 'negative' })).status).toBe(201);

  await stack.kill(stack.process('evals'));
  const res = await admin.delete(`${projectPath(p)}/conversations/c-1`);
  expect(res.status).toBe(202);
  const id = res.body.data.id as string;
  // Every other service does its part; evals' waits on its durable.
  const partial = await eventually(
    async () => {
      const job = await erasureOf(p, id);
      const s = stateOf(job);
      return s.management === 'done' && s['events-ingest'] === 'done' && s.analytics === 'done' ? job : undefined;
    },
    'every part but evals done',
    40_000,
  );
  expect(partial).toMatchObject({ status: 'pending', completedAt: null });
  expect(stateOf(partial).evals).toBe('pending');
  expect((await admin.get(`${projectPath(p)}/feedback`)).body.pagination.total).toBe(0);

  await stack.startProcess('evals');
  const done = await eventually(async () => ((await erasureOf(p, id)).status === 'done' ? erasureOf(p, id) : undefined), 'the erasure done', 60_000);
  expect(stateOf(done)).toEqual({ management: 'done', 'events-ingest': 'done', analytics: 'done', evals: 'done' });
  expect((await run.post('/run/v1/events', { id: 'ev-1', type: 'message', conversationId: 'c-1' })).status).toBe(201);
}, 150_000);

test('when a project is being erased, then writes to it answer 409, reads still answer, and a repeated deletion answers the same job', async () => {
  const admin = stack.admin;
  const p = aProject();
  const run = client(stack.gatewayUrl, (await anApiKey(admin, p)).key);
  expect((await run.post('/run/v1/events', { type: 'message', conversationId: 'c-1' })).status).toBe(201);
  const other = aProject();
  const res = await admin.delete(projectPath(p));
  expect(res.status).toBe(202);
  expectProblem(await admin.post(`${projectPath(p)}/feedback`, { conversationId: 'c-1', type: 'negative' }), 409);
  expectProblem(await run.post('/run/v1/events', { type: 'message', conversationId: 'c-1' }), 409);
  expect((await admin.get(`${projectPath(p)}/feedback`)).status).toBe(200);
  const again = await admin.delete(projectPath(p));
  expect(again.status).toBe(202);
  expect(again.body.data.id).toBe(res.body.data.id);
  // Other projects are not affected.
  expect((await admin.post(`${projectPath(other)}/feedback`, { conversationId: 'c-1', type: 'negative' })).status).toBe(201);
}, 60_000);

test('when a gateway starts while a project is being erased, then it refuses writes to the project too (it reads the projects being erased at start)', async () => {
  const p = aProject();
  expect((await stack.admin.post(`${projectPath(p)}/feedback`, { conversationId: 'c-1', type: 'negative' })).status).toBe(201);
  expect((await stack.admin.delete(projectPath(p))).status).toBe(202);
  const late = await startGatewayProcess(stack.env, {}, 'gateway-erasing');
  try {
    const admin = client(late.url, stack.adminToken);
    expectProblem(await admin.post(`${projectPath(p)}/feedback`, { conversationId: 'c-1', type: 'negative' }), 409);
    expect((await admin.get(`${projectPath(p)}/feedback`)).status).toBe(200);
  } finally {
    await late.stop();
  }
}, 60_000);
