import {
  adminApi,
  aProject,
  startReceiver,
  testStack,
  type Receiver,
  adminClient,
  anAgentNamed,
} from '@platform/testkit';

const stack = testStack();
const api = adminApi(stack);
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

describe('the event path, end to end', () => {
  test('when an event is posted with an API key, then it is stored (201), replayed (200) and delivered to the webhook', async () => {
    const p = aProject();
    await anAgentNamed(adminClient(), p, 'agent-a');
    const { key } = (await api.createApiKey({ params: p, body: { agentId: 'agent-a', name: 'events' } })).data;
    await api.createWebhookDestination({
      params: p,
      body: { name: 'local', url: receiver.url, eventTypes: ['event.created'] },
    });

    const run = api.withToken(key);
    const first = await run.send(run.ops.createRunEvent, {
      body: { id: 'evt-1', type: 'page.viewed', properties: { page: '/' } },
    });
    expect(first.status).toBe(201);
    expect(first.body.data).toMatchObject({
      id: 'evt-1',
      type: 'page.viewed',
      agentId: 'agent-a',
      tenantId: p.tenantId,
      projectId: p.projectId,
      serverMetadata: { authMethod: 'api_key' },
    });

    const again = await run.send(run.ops.createRunEvent, { body: { id: 'evt-1', type: 'something.else' } });
    expect(again.status).toBe(200);
    expect(again.body.data).toEqual(first.body.data);

    const [delivery] = await receiver.waitFor(
      (r) => r.json?.data?.event?.id === 'evt-1' && r.json?.tenantId === p.tenantId,
    );
    expect(delivery!.json).toMatchObject({
      type: 'event.created',
      tenantId: p.tenantId,
      projectId: p.projectId,
      agentId: 'agent-a',
      data: { event: first.body.data },
    });
  });
});
