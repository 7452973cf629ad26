import { anApiKey, aProject, client, eventually, projectPath } from '@platform/testkit';
import { eventPathStack } from '../support/webhooks';

/**
 * A destination at its cap of attempts in flight (WEBHOOK_MAX_IN_FLIGHT_PER_DESTINATION) makes the next deliveries
 * to it wait in the dispatcher for a slot, and they are sent as soon as one comes free, not after a fixed wait as
 * jobs. Here the fixed wait (WEBHOOK_CAP_WAIT_MS) is two minutes: a delivery put back as a job would miss the test's
 * deadline.
 */
const CAP = 2;
const running = eventPathStack(
  {
    name: 'destination-cap',
    healthPorts: true,
    env: {
      WEBHOOK_MAX_IN_FLIGHT_PER_DESTINATION: String(CAP),
      WEBHOOK_CAP_WAIT_MS: '120000',
      WEBHOOK_TIMEOUT_MS: '60000',
    },
  },
  240_000,
);
const eventIds = () => running.receiver.received.map((r) => r.json?.data?.event?.id as string);

test('when deliveries find their destination at its cap, then they are sent as soon as a slot comes free, never more than the cap at once', async () => {
  const { stack, receiver } = running;
  const admin = stack.admin;
  const p = aProject();
  const P = projectPath(p);
  expect(
    (await admin.post(`${P}/webhook-destinations`, { name: 'slow', url: receiver.url, eventTypes: ['event.created'] }))
      .status,
  ).toBe(201);
  const { key } = await anApiKey(admin, p);
  const run = client(stack.gatewayUrl, key);
  receiver.hold();
  const ids = Array.from({ length: 2 * CAP }, (_, i) => `cap-${i}`);
  for (const id of ids) expect((await run.post('/run/v1/events', { id, type: 'cap.tested' })).status).toBe(201);

  // The receiver holds the cap's worth; the others wait in the dispatcher.
  await eventually(() => receiver.held === CAP, `the receiver holds ${CAP} deliveries`, 30_000);
  expect(receiver.received).toHaveLength(CAP);
  receiver.release();

  await eventually(() => new Set(eventIds()).size === ids.length, `all ${ids.length} events delivered`, 30_000);
  expect(new Set(eventIds())).toEqual(new Set(ids));
  // None was put back to wait as a job.
  const metrics = await (
    await fetch(`${stack.process('webhook-dispatcher').healthUrl}/metrics`, { signal: AbortSignal.timeout(5000) })
  ).text();
  const waits = /^webhook_destination_cap_waits_total(?:\{[^}]*\})? (\d+)/m.exec(metrics);
  expect(Number(waits?.[1] ?? 0)).toBe(0);
}, 240_000);

test('when a burst larger than the cap and its line reaches a destination that answers, then every delivery is sent without waiting WEBHOOK_CAP_WAIT_MS', async () => {
  const { stack, receiver } = running;
  const admin = stack.admin;
  const p = aProject();
  const P = projectPath(p);
  expect(
    (await admin.post(`${P}/webhook-destinations`, { name: 'fast', url: receiver.url, eventTypes: ['event.created'] }))
      .status,
  ).toBe(201);
  const { key } = await anApiKey(admin, p);
  const run = client(stack.gatewayUrl, key);
  // Posted at once: stored together and published together, so the dispatcher gets them as one burst.
  const ids = Array.from({ length: 12 * CAP }, (_, i) => `burst-${i}`);
  const answers = await Promise.all(ids.map((id) => run.post('/run/v1/events', { id, type: 'burst.tested' })));
  expect(answers.map((a) => a.status)).toEqual(ids.map(() => 201));
  // WEBHOOK_CAP_WAIT_MS is two minutes: a delivery that waited it out would miss this deadline.
  await eventually(() => ids.every((id) => eventIds().includes(id)), `all ${ids.length} events delivered`, 30_000);
}, 240_000);
