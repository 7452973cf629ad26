import { anApiKey, aProject, client, projectPath, startPrivateStack, startReceiver, type PrivateStack, type ReceivedRequest, type Receiver } from '@platform/testkit';

/**
 * The dispatcher's list of a project's destinations, once past DESTINATION_CACHE_MS, is fetched again in the background
 * while the list in hand is used: a stalled management process (SIGSTOP: NATS still hands it the request, it answers
 * none) holds up no delivery to a destination the dispatcher already knows.
 */
let stack: PrivateStack;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
  stack = await startPrivateStack({
    name: 'destination-cache',
    services: ['management', 'run-auth', 'events-ingest', 'webhook-dispatcher'],
    // Every list is past its time at once: each lookup uses the list in hand and asks management for a fresh one.
    // The run key stays verified while management is stalled.
    env: { ALLOW_LOOPBACK_WEBHOOKS: 'true', DESTINATION_CACHE_MS: '0', AUTH_CACHE_TTL_MS: '600000' },
  });
}, 240_000);

afterAll(async () => {
  for (const p of stack?.processes ?? []) p.child.kill('SIGCONT');
  await stack?.stop();
  await receiver?.close();
});

const deliveredEvent = (id: string) => (r: ReceivedRequest) => r.json?.data?.event?.id === id;

test('when management stalls, then events of a project whose destinations the dispatcher knows are still delivered', async () => {
  const p = aProject();
  const { key } = await anApiKey(stack.admin, p);
  expect((await stack.admin.post(`${projectPath(p)}/webhook-destinations`, { name: 'known', url: receiver.url, eventTypes: ['event.created'] })).status).toBe(201);
  const run = client(stack.gatewayUrl, key);
  // The first delivery makes the dispatcher fetch the project's list (and the gateway verify the key).
  expect((await run.post('/run/v1/events', { id: 'before-stall', type: 'cache.tested' })).status).toBe(201);
  await receiver.waitFor(deliveredEvent('before-stall'));

  const management = stack.process('management');
  management.child.kill('SIGSTOP');
  try {
    expect((await run.post('/run/v1/events', { id: 'during-stall', type: 'cache.tested' })).status).toBe(201);
    const [delivery] = await receiver.waitFor(deliveredEvent('during-stall'));
    expect(delivery!.json?.data?.event).toMatchObject({ id: 'during-stall', type: 'cache.tested' });
  } finally {
    management.child.kill('SIGCONT');
  }
}, 120_000);
