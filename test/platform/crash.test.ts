import { aProject, anApiKey, client, eventually, withDatabase } from '@platform/testkit';
import { createDestination, eventPathStack } from '../support/webhooks';

/**
 * A stack of its own (private NATS, the services on the event path) so its processes can be killed
 * without touching the shared test stack.
 */
const running = eventPathStack(
  {
    name: 'crash',
    env: {
      NATS_REQUEST_TIMEOUT_MS: '3000',
      WEBHOOK_RETRY_SCHEDULE_MS: '300,600,1200',
      WEBHOOK_CAP_WAIT_MS: '100',
      WEBHOOK_TIMEOUT_MS: '2000',
      WEBHOOK_TEST_TIMEOUT_MS: '2000',
      OUTBOX_SWEEP_MS: '500',
    },
  },
  120_000,
);

test('when events-ingest and then webhook-dispatcher are SIGKILLed while 1,000 events are posted, then exactly 1,000 rows exist and every event is delivered', async () => {
  const { stack, receiver } = running;
  const admin = stack.admin;
  const p = aProject();
  const { key } = await anApiKey(admin, p, { agentId: 'crash-agent' });
  await createDestination(admin, p, { name: 'r', url: receiver.url, eventTypes: ['event.created'] });
  const run = client(stack.gatewayUrl, key);

  const TOTAL = 1000;
  let next = 0;
  let accepted = 0;
  // A refused or failed post is retried until accepted.
  const post = (i: number) =>
    eventually(
      async () => {
        const res = await run
          .post('/run/v1/events', { id: `crash-${i}`, type: 'load.tested', properties: { i } })
          .catch(() => undefined);
        return res?.status === 201 || res?.status === 200;
      },
      `event crash-${i} accepted`,
      120_000,
    );
  const worker = async () => {
    while (next < TOTAL) {
      const i = next++;
      await post(i);
      accepted++;
    }
  };
  const acceptedAtKill: number[] = [];
  const chaos = async () => {
    await eventually(() => accepted >= 250, '250 events accepted', 120_000, 10);
    acceptedAtKill.push(accepted);
    await stack.kill(stack.process('events-ingest'), 'SIGKILL');
    await stack.startProcess('events-ingest');
    await eventually(() => accepted >= 600, '600 events accepted', 120_000, 10);
    acceptedAtKill.push(accepted);
    await stack.kill(stack.process('webhook-dispatcher'), 'SIGKILL');
    await stack.startProcess('webhook-dispatcher');
  };
  await Promise.all([...Array.from({ length: 16 }, worker), chaos()]);
  expect(accepted).toBe(TOTAL);

  // Exactly one row per posted event: as many rows as events, and every posted id among them (no duplicate, no loss).
  const rows = await withDatabase(
    stack.env.MONGO_URL!,
    'events-ingest',
    (db) =>
      db
        .collection('runEvents')
        .find({ tenantId: p.tenantId, projectId: p.projectId }, { projection: { id: 1, _id: 1 } })
        .toArray(),
    stack.dbPrefix,
  );
  const storedIds = rows.map(
    (r) =>
      String((r as { id?: string }).id ?? r._id)
        .split(':')
        .pop()!,
  );
  expect(storedIds.length).toBe(TOTAL);
  expect(new Set(storedIds)).toEqual(new Set(Array.from({ length: TOTAL }, (_, i) => `crash-${i}`)));

  const ours = (r: { json?: any }) => r.json?.tenantId === p.tenantId;
  const deliveredIds = () => new Set(receiver.received.filter(ours).map((r) => r.json.data.event.id as string));
  // Redelivery after a SIGKILL waits for JetStream's ack wait and the delivery lease: allow for both.
  await eventually(() => deliveredIds().size >= TOTAL, 'every event delivered', 150_000, 500).catch(() => undefined);
  expect(deliveredIds().size).toBe(TOTAL);
  // Both kills came while posts were still being made (the gateway and the client resend events with an id, so the
  // posts caught by the kill may never show as failures; above, none of the resends created a second row).
  expect(acceptedAtKill).toHaveLength(2);
  for (const n of acceptedAtKill) expect(n).toBeLessThan(TOTAL);
}, 330_000);
