import { join } from 'node:path';
import {
  adminClient,
  aProject,
  anApiKey,
  client,
  ensureInfra,
  localSecrets,
  projectPath,
  removeNatsStore,
  repoRoot,
  startNatsServer,
  startReceiver,
  startStack,
  withDatabase,
  dropDatabases,
  type NatsServer,
  type Receiver,
  type Stack,
} from '@platform/testkit';

/**
 * A stack of its own (private NATS, the services on the event path) so its processes can be killed
 * without touching the shared test stack.
 */
let nats: NatsServer;
let stack: Stack;
let receiver: Receiver;
let adminToken: string;
const dbPrefix = `crash${Date.now().toString(36)}`;

beforeAll(async () => {
  const shared = ensureInfra();
  nats = await startNatsServer();
  const secrets = localSecrets();
  adminToken = secrets.ADMIN_TOKEN!;
  stack = await startStack({
    infra: { ...shared, NATS_URL: nats.url },
    services: ['management', 'run-auth', 'events-ingest', 'webhook-dispatcher'],
    logDir: join(repoRoot, '.infra', 'test-logs', `crash-${Date.now().toString(36)}`),
    env: { ...secrets, MONGO_DB_PREFIX: dbPrefix, LOG_LEVEL: 'warn', REDIS_KEY_PREFIX: `crash:${Date.now()}:`, ALLOW_LOOPBACK_WEBHOOKS: 'true', NATS_REQUEST_TIMEOUT_MS: '3000', WEBHOOK_RETRY_SCHEDULE_MS: '300,600,1200', WEBHOOK_CAP_WAIT_MS: '100', WEBHOOK_TIMEOUT_MS: '2000', WEBHOOK_TEST_TIMEOUT_MS: '2000', WEBHOOK_PARTITION: `crash-${Date.now().toString(36)}`, OUTBOX_SWEEP_MS: '500' },
  });
  receiver = await startReceiver();
}, 120_000);

afterAll(async () => {
  await receiver?.close();
  await stack?.stop();
  if (stack) await dropDatabases(stack.env.MONGO_URL!, dbPrefix).catch(() => undefined);
  if (nats) {
    await nats.stop();
    removeNatsStore(nats);
  }
});

test('when events-ingest and then webhook-dispatcher are SIGKILLed while 1,000 events are posted, then exactly 1,000 rows exist and every event is delivered', async () => {
  const admin = adminClient({ gatewayUrl: stack.gatewayUrl, adminToken });
  const p = aProject();
  const { key } = await anApiKey(admin, p, { agentId: 'crash-agent' });
  expect((await admin.post(`${projectPath(p)}/webhook-destinations`, { name: 'r', url: receiver.url, eventTypes: ['event.created'] })).status).toBe(201);
  const run = client(stack.gatewayUrl, key);

  const TOTAL = 1000;
  let next = 0;
  let accepted = 0;
  let failedAttempts = 0;
  const post = async (i: number) => {
    for (;;) {
      try {
        const res = await run.post('/run/v1/events', { id: `crash-${i}`, type: 'load.tested', properties: { i } });
        if (res.status === 201 || res.status === 200) return;
      } catch {
        /* connection refused or reset: retry */
      }
      failedAttempts++;
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const worker = async () => {
    while (next < TOTAL) {
      const i = next++;
      await post(i);
      accepted++;
    }
  };
  const chaos = async () => {
    while (accepted < 250) await new Promise((r) => setTimeout(r, 10));
    const ingest = stack.processes.find((x) => x.name === 'events-ingest')!;
    await stack.kill(ingest, 'SIGKILL');
    await stack.startProcess('events-ingest');
    while (accepted < 600) await new Promise((r) => setTimeout(r, 10));
    const dispatcher = stack.processes.find((x) => x.name === 'webhook-dispatcher')!;
    await stack.kill(dispatcher, 'SIGKILL');
    await stack.startProcess('webhook-dispatcher');
  };
  await Promise.all([...Array.from({ length: 16 }, worker), chaos()]);
  expect(accepted).toBe(TOTAL);

  const rows = await withDatabase(stack.env.MONGO_URL!, 'events-ingest', (db) => db.collection('runEvents').countDocuments({ tenantId: p.tenantId, projectId: p.projectId }), dbPrefix);
  expect(rows).toBe(TOTAL);

  const ours = (r: { json?: any }) => r.json?.tenantId === p.tenantId;
  const deliveredIds = () => new Set(receiver.received.filter(ours).map((r) => r.json.data.event.id as string));
  // Redelivery after a SIGKILL waits for JetStream's ack wait and the delivery lease: allow for both.
  for (const deadline = Date.now() + 150_000; deliveredIds().size < TOTAL && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 500));
  const delivered = deliveredIds();
  expect(delivered.size).toBe(TOTAL);
  // Retries happened (the kill was felt), and none of them created a second row.
  expect(failedAttempts).toBeGreaterThan(0);
}, 330_000);
