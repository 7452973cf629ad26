import type { NatsConnection } from 'nats';
import { PLATFORM_EVENTS_STREAM } from '@platform/contracts';
import { connectAs, anApiKey, aProject, client, eventually, projectPath } from '@platform/testkit';
import { sample, scrape } from '../support/metrics';
import { eventPathStack } from '../support/webhooks';

/**
 * Most projects have no webhook destination, yet the dispatcher receives every event. The events of a project it
 * knows (from its destination cache) to have no enabled destination are acknowledged without being read.
 */
const DURABLE = 'webhook-dispatcher-event-created';
// A long cache time: the events below come while the project's empty list is still remembered, however slow the machine.
const running = eventPathStack(
  { name: 'idle-projects', healthPorts: true, env: { DESTINATION_CACHE_MS: '600000' } },
  240_000,
);
let nc: NatsConnection;
beforeAll(async () => {
  nc = await connectAs(running.stack.natsUrl, 'admin');
  running.stack.onStop(() => nc.close());
});

const skipped = async () =>
  sample(await scrape(running.stack.process('webhook-dispatcher').healthUrl), 'jetstream_messages_skipped_total', {
    durable: DURABLE,
  }) ?? 0;

/** Every event.created message the dispatcher was given is acknowledged. */
async function dispatcherCaughtUp(): Promise<boolean> {
  const info = await (await nc.jetstreamManager()).consumers.info(PLATFORM_EVENTS_STREAM, DURABLE);
  return info.num_pending === 0 && info.num_ack_pending === 0;
}

test('when a project has no destination, then its events are acknowledged unread; once it has one, its events are delivered', async () => {
  const { stack, receiver } = running;
  const p = aProject();
  const { key } = await anApiKey(stack.admin, p);
  const run = client(stack.gatewayUrl, key);
  // The first event is read: the dispatcher asks management for the project's destinations and remembers none.
  expect((await run.post('/run/v1/events', { id: 'idle-0', type: 'idle.tested' })).status).toBe(201);
  await eventually(dispatcherCaughtUp, 'the dispatcher acknowledged the first event', 30_000);

  const before = await skipped();
  for (let i = 1; i <= 5; i++)
    expect((await run.post('/run/v1/events', { id: `idle-${i}`, type: 'idle.tested' })).status).toBe(201);
  await eventually(async () => (await skipped()) - before === 5, 'the next 5 events acknowledged unread', 30_000);
  expect(await dispatcherCaughtUp()).toBe(true);

  // A destination's creation is published as an event, which clears the project from the cache: events posted after
  // that are read and delivered. (It is published just after management answers, so the test posts until one arrives.)
  expect(
    (
      await stack.admin.post(`${projectPath(p)}/webhook-destinations`, {
        name: 'now',
        url: receiver.url,
        eventTypes: ['event.created'],
      })
    ).status,
  ).toBe(201);
  let n = 0;
  await eventually(
    async () => {
      const id = `after-${n++}`;
      expect((await run.post('/run/v1/events', { id, type: 'idle.tested' })).status).toBe(201);
      await receiver.waitFor((r) => r.json?.data?.event?.id === id, 1, 2_000).catch(() => undefined);
      return receiver.received.some((r) => r.json?.data?.event?.id === id);
    },
    'an event posted after the destination was created is delivered',
    30_000,
  );
  // Nothing from before the destination existed was delivered.
  expect(receiver.received.filter((r) => String(r.json?.data?.event?.id).startsWith('idle-'))).toHaveLength(0);
}, 240_000);
