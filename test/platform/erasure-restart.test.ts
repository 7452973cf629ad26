import { PROJECT_ERASURE_SERVICES } from '@platform/contracts';
import {
  aProject,
  anApiKey,
  client,
  eventually,
  projectPath,
  rowsOfProject,
  startGatewayProcess,
  startPrivateStack,
  startReceiver,
  type PrivateStack,
} from '@platform/testkit';
import { expectProblem } from '../support/expect-problem';

/**
 * A stack of its own with every service, so evals and webhook-dispatcher can be stopped and started while an erasure
 * is under way (a service that is not running never reports its part, so the job waits for it).
 */
let stack: PrivateStack;

beforeAll(async () => {
  stack = await startPrivateStack({ name: 'erasure', env: { ANALYTICS_PORT: '0', ALLOW_LOOPBACK_WEBHOOKS: 'true' } });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
});

const erasureOf = async (p: { tenantId: string; projectId: string }, id: string) =>
  (await stack.admin.get(`${projectPath(p)}/erasures/${id}`)).body.data;
const stateOf = (job: { services: Array<{ service: string; state: string }> }) =>
  Object.fromEntries(job.services.map((s) => [s.service, s.state]));

test('when evals is down during a conversation erasure, then the erasure waits for it and completes once it is back', async () => {
  const admin = stack.admin;
  const p = aProject();
  const run = client(stack.gatewayUrl, (await anApiKey(admin, p)).key);
  expect((await run.post('/run/v1/events', { id: 'ev-1', type: 'message', conversationId: 'c-1' })).status).toBe(201);
  expect((await admin.post(`${projectPath(p)}/feedback`, { conversationId: 'c-1', type: 'negative' })).status).toBe(
    201,
  );

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
  const done = await eventually(
    async () => ((await erasureOf(p, id)).status === 'done' ? erasureOf(p, id) : undefined),
    'the erasure done',
    60_000,
  );
  expect(stateOf(done)).toEqual({
    management: 'done',
    'events-ingest': 'done',
    analytics: 'done',
    evals: 'done',
    gateway: 'done',
  });
  expect((await run.post('/run/v1/events', { id: 'ev-1', type: 'message', conversationId: 'c-1' })).status).toBe(201);
}, 150_000);

test('when webhook-dispatcher is down during a project erasure, then writes answer 409 (on a gateway started meanwhile too) and reads answer until it is back, and then the erasure completes and none of its deliveries are left', async () => {
  const admin = stack.admin;
  const p = aProject();
  const P = projectPath(p);
  const receiver = await startReceiver();
  try {
    const run = client(stack.gatewayUrl, (await anApiKey(admin, p)).key);
    expect(
      (await admin.post(`${P}/webhook-destinations`, { name: 'r', url: receiver.url, eventTypes: ['event.created'] }))
        .status,
    ).toBe(201);
    expect((await run.post('/run/v1/events', { type: 'message', conversationId: 'c-1' })).status).toBe(201);
    await receiver.waitFor(() => true, 1);
    const dispatcherRows = async () =>
      Object.keys(await rowsOfProject(stack.env.MONGO_URL!, stack.dbPrefix, p)).filter((k) =>
        k.includes('_webhook_dispatcher.'),
      );
    await eventually(async () => (await dispatcherRows()).length > 0, 'the delivery recorded by the dispatcher');
    const other = aProject();

    await stack.kill(stack.process('webhook-dispatcher'));
    const res = await admin.delete(P);
    expect(res.status).toBe(202);
    const id = res.body.data.id as string;
    // Writes are refused from the answer on (the API key still works until management's part deletes it).
    expectProblem(await admin.post(`${P}/feedback`, { conversationId: 'c-1', type: 'negative' }), 409);
    expect((await admin.get(`${P}/feedback`)).status).toBe(200);
    const again = await admin.delete(P);
    expect(again.status).toBe(202);
    expect(again.body.data.id).toBe(id);
    // Every other service does its part; the dispatcher's waits on its durable, with its documents.
    const partial = await eventually(
      async () => {
        const job = await erasureOf(p, id);
        return Object.entries(stateOf(job)).every(
          ([service, state]) => service === 'webhook-dispatcher' || state === 'done',
        )
          ? job
          : undefined;
      },
      'every part but the dispatcher done',
      40_000,
    );
    expect(partial).toMatchObject({ status: 'pending', completedAt: null });
    expect(stateOf(partial)['webhook-dispatcher']).toBe('pending');
    expect(await dispatcherRows()).not.toEqual([]);
    expectProblem(await admin.post(`${P}/feedback`, { conversationId: 'c-1', type: 'negative' }), 409);
    // A gateway that starts now reads the projects being erased before it listens: it refuses writes too.
    const late = await startGatewayProcess(stack.env, {}, 'gateway-erasing');
    try {
      const lateAdmin = client(late.url, stack.adminToken);
      expectProblem(await lateAdmin.post(`${P}/feedback`, { conversationId: 'c-1', type: 'negative' }), 409);
      expect((await lateAdmin.get(`${P}/feedback`)).status).toBe(200);
    } finally {
      await late.stop();
    }
    // Other projects are not affected.
    expect(
      (await admin.post(`${projectPath(other)}/feedback`, { conversationId: 'c-1', type: 'negative' })).status,
    ).toBe(201);

    await stack.startProcess('webhook-dispatcher');
    const done = await eventually(
      async () => ((await erasureOf(p, id)).status === 'done' ? erasureOf(p, id) : undefined),
      'the erasure done',
      60_000,
    );
    expect(Object.values(stateOf(done)).every((state) => state === 'done')).toBe(true);
    expect(Object.keys(stateOf(done)).sort()).toEqual([...PROJECT_ERASURE_SERVICES].sort());
    expect(await dispatcherRows()).toEqual([]);
    // Writable again once done.
    expect((await admin.post(`${P}/feedback`, { conversationId: 'c-2', type: 'positive' })).status).toBe(201);
  } finally {
    await receiver.close();
  }
}, 180_000);
