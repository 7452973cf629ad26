import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  adminClient,
  anApiKey,
  aProject,
  client,
  dropDatabases,
  ensureInfra,
  eventually,
  localSecrets,
  projectPath,
  removeNatsStore,
  repoRoot,
  startNatsServer,
  startReceiver,
  startStack,
  type Client,
  type NatsServer,
  type Receiver,
  type Stack,
} from '@platform/testkit';

/**
 * Receivers that never answer or answer with an endless body must not stall the dispatcher: each destination holds
 * at most WEBHOOK_MAX_IN_FLIGHT_PER_DESTINATION attempts in flight, so a healthy destination keeps its deliveries
 * flowing. A stack of its own (private NATS) so the dispatcher's limits can be small: 8 attempts at once, 2 per
 * destination, 2 s per attempt.
 */
const CAP = 2;
const N = 30;
let nats: NatsServer;
let stack: Stack;
let admin: Client;
let healthy: Receiver;
let bad: http.Server;
let badUrl = '';
/** Requests the hanging receiver holds right now, and the most it ever held at once. */
let hanging = 0;
let maxHanging = 0;

beforeAll(async () => {
  const shared = ensureInfra();
  nats = await startNatsServer();
  healthy = await startReceiver();
  bad = http.createServer((req, res) => {
    if (req.url === '/hang') {
      // Reads the request, never answers.
      hanging++;
      maxHanging = Math.max(maxHanging, hanging);
      res.once('close', () => hanging--);
      req.resume();
      return;
    }
    // /huge: a 500 with an endless body.
    req.resume();
    res.writeHead(500, { 'content-type': 'application/octet-stream' });
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const pump = () => {
      while (!res.destroyed && res.write(chunk)) {
        /* until the socket pushes back */
      }
    };
    res.on('drain', pump);
    pump();
  });
  await new Promise<void>((r) => bad.listen(0, '127.0.0.1', r));
  badUrl = `http://127.0.0.1:${(bad.address() as AddressInfo).port}`;
  const secrets = localSecrets();
  const runId = Date.now().toString(36);
  stack = await startStack({
    infra: { ...shared, NATS_URL: nats.url },
    services: ['management', 'run-auth', 'events-ingest', 'webhook-dispatcher'],
    healthPorts: true,
    logDir: join(repoRoot, '.infra', 'test-logs', `receiver-limits-${runId}`),
    env: {
      ...secrets,
      MONGO_DB_PREFIX: `rlim${runId}`,
      LOG_LEVEL: 'warn',
      REDIS_KEY_PREFIX: `rlim:${runId}:`,
      ALLOW_LOOPBACK_WEBHOOKS: 'true',
      AUTH_FAILURE_LIMIT_PER_IP: '1000000',
      WEBHOOK_CONCURRENCY: '8',
      WEBHOOK_MAX_IN_FLIGHT_PER_DESTINATION: String(CAP),
      WEBHOOK_TIMEOUT_MS: '2000',
      WEBHOOK_CONNECT_TIMEOUT_MS: '1000',
      // The first retry comes soon, the second much later: failed attempts stay visible as "retry scheduled".
      WEBHOOK_RETRY_SCHEDULE_MS: '300,120000',
      WEBHOOK_RETRY_JITTER: '0',
      WEBHOOK_POLL_INTERVAL_MS: '100',
      WEBHOOK_PARTITION: `rlim-${runId}`,
      OUTBOX_SWEEP_MS: '500',
    },
  });
  admin = adminClient({ gatewayUrl: stack.gatewayUrl, adminToken: secrets.ADMIN_TOKEN! });
}, 240_000);

afterAll(async () => {
  await stack?.stop();
  if (stack) await dropDatabases(stack.env.MONGO_URL!, stack.env.MONGO_DB_PREFIX!).catch(() => undefined);
  if (nats) {
    await nats.stop();
    removeNatsStore(nats);
  }
  await healthy?.close();
  bad?.closeAllConnections();
  if (bad) await new Promise<void>((r) => bad.close(() => r()));
});

test('when one destination hangs and another answers with an endless body, then every event still reaches a healthy destination, the bad ones hold at most their cap of sends and get failed attempts with retries scheduled, and the dispatcher stays responsive', async () => {
  const p = aProject();
  const P = projectPath(p);
  const create = async (name: string, url: string) => {
    const res = await admin.post(`${P}/webhook-destinations`, { name, url, eventTypes: ['event.created'] });
    expect(res.status).toBe(201);
    return res.body.data.id as string;
  };
  const hangId = await create('hangs', `${badUrl}/hang`);
  const hugeId = await create('endless body', `${badUrl}/huge`);
  const healthyId = await create('healthy', healthy.url);
  // The healthy receiver refuses its first deliveries, so part of its work also goes through the retry poller,
  // where it competes with the bad destinations' retries for the dispatcher's 8 slots.
  healthy.respondWith(...Array.from({ length: 10 }, () => 503));

  const { key } = await anApiKey(admin, p);
  const run = client(stack.gatewayUrl, key);
  for (let i = 0; i < N; i++) expect((await run.post('/run/v1/events', { id: `lim-${i}`, type: 'limits.tested' })).status).toBe(201);

  const ours = (r: { json?: any }) => r.json?.tenantId === p.tenantId;
  const deliveredIds = () => new Set(healthy.received.filter((r) => ours(r) && r.json?.data?.event?.id).map((r) => r.json.data.event.id as string));
  await eventually(() => deliveredIds().size === N, `all ${N} events delivered to the healthy destination`, 60_000);

  const dispatcher = stack.processes.find((x) => x.name === 'webhook-dispatcher')!;
  // The dispatcher answers its health check while the hanging receiver holds sends.
  expect((await fetch(`${dispatcher.healthUrl}/healthz`, { signal: AbortSignal.timeout(5000) })).status).toBe(200);

  const deliveries = async (destinationId: string) => {
    const res = await admin.get(`${P}/webhook-destinations/${destinationId}/deliveries?limit=100`);
    expect(res.status).toBe(200);
    return res.body as { data: Array<{ status: string; attemptCount: number; nextAttemptAt: string | null; attempts: Array<{ ok: boolean; statusCode: number | null; error: string | null }> }>; pagination: { total: number } };
  };
  // Every event has its delivery record for each bad destination: none lost while they waited for a slot.
  // The endless-body receiver answers 500 at once: each delivery gets a failed attempt and a retry scheduled.
  await eventually(
    async () => {
      const d = await deliveries(hugeId);
      return d.pagination.total === N && d.data.every((x) => x.status === 'pending' && x.nextAttemptAt && x.attempts.length > 0 && x.attempts.every((a) => !a.ok && a.statusCode === 500));
    },
    'a failed attempt (500) and a scheduled retry on every delivery to the endless-body receiver',
    60_000,
  );
  // The hanging receiver's attempts time out one cap-full at a time: failed attempts with retries scheduled.
  await eventually(
    async () => {
      const d = await deliveries(hangId);
      const timedOut = d.data.filter((x) => x.status === 'pending' && x.nextAttemptAt && x.attempts.length > 0 && x.attempts.every((a) => !a.ok && /timed out/.test(a.error ?? '')));
      return d.pagination.total === N && timedOut.length >= CAP;
    },
    'timed-out attempts with retries scheduled on deliveries to the hanging receiver',
    60_000,
  );
  expect(maxHanging).toBeGreaterThan(0);
  expect(maxHanging).toBeLessThanOrEqual(CAP);

  // The cap is visible to operators: deliveries were put back to wait, and the metrics endpoint answers.
  const metrics = await fetch(`${dispatcher.healthUrl}/metrics`, { signal: AbortSignal.timeout(5000) });
  expect(metrics.status).toBe(200);
  const waits = /^webhook_destination_cap_waits_total(?:\{[^}]*\})? (\d+)/m.exec(await metrics.text());
  expect(Number(waits?.[1] ?? 0)).toBeGreaterThan(0);
  // The healthy destination's log (an attempt is recorded just after the receiver answered it): every delivery
  // delivered, by exactly one successful attempt.
  await eventually(
    async () => {
      const good = await deliveries(healthyId);
      return good.pagination.total === N && good.data.filter((x) => x.status === 'delivered' && x.attempts.filter((a) => a.ok).length === 1).length === N;
    },
    `all ${N} deliveries to the healthy destination recorded as delivered by one successful attempt`,
    30_000,
  );
}, 240_000);
