import { anApiKey, aProject, client, projectPath, type ReceivedRequest } from '@platform/testkit';
import { eventPathStack } from '../support/webhooks';

/**
 * The dispatcher's list of a project's destinations, once past DESTINATION_CACHE_MS, is fetched again in the background
 * while the list in hand is used: a stalled management process (SIGSTOP: NATS still hands it the request, it answers
 * none) holds up no delivery to a destination the dispatcher already knows.
 */
const running = eventPathStack(
  {
    name: 'destination-cache',
    // Every list is past its time at once: each lookup uses the list in hand and asks management for a fresh one.
    // The run key stays verified while management is stalled.
    env: { DESTINATION_CACHE_MS: '0', AUTH_CACHE_TTL_MS: '600000' },
  },
  240_000,
);

const deliveredEvent = (id: string) => (r: ReceivedRequest) => r.json?.data?.event?.id === id;

test('when management stalls, then events of a project whose destinations the dispatcher knows are still delivered', async () => {
  const { stack, receiver } = running;
  const p = aProject();
  const { key } = await anApiKey(stack.admin, p);
  expect(
    (
      await stack.admin.post(`${projectPath(p)}/webhook-destinations`, {
        name: 'known',
        url: receiver.url,
        eventTypes: ['event.created'],
      })
    ).status,
  ).toBe(201);
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
