import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  anApiKey,
  aProject,
  client,
  eventually,
  projectPath,
  startPrivateStack,
  type Client,
  type PrivateStack,
} from '@platform/testkit';

/**
 * Receivers that never answer or answer with an endless body must not stall the dispatcher: each destination holds
 * at most WEBHOOK_MAX_IN_FLIGHT_PER_DESTINATION attempts in flight, so a healthy destination keeps its deliveries
 * flowing. A stack of its own (private NATS) so the dispatcher's limits can be small: 8 attempts at once, 4 per
 * destination, 2 s per attempt.
 *
 * The hanging destination's deliveries go at the cap's pace by design: each attempt holds a slot for the 2 s timeout,
 * and each first attempt's retry (300 ms later) competes with the first attempts still waiting, so all N have an
 * attempt only after about 2 N attempts, 2 N x 2 s / CAP. With a cap of 2 that was 60 s, the very wait the test
 * allowed (54 s on an idle machine): under the full suite's load it ran out. A cap of 4 takes about 28 s.
 */
const CAP = 4;
const N = 30;
let stack: PrivateStack;
let admin: Client;
/** The healthy receiver: refuses (503) the first attempt of its first 10 deliveries, answers 200 to everything else. */
let healthy: http.Server;
let healthyUrl = '';
const answered: Array<{ webhookId: string; tenantId: string; eventId: string; status: number }> = [];
let bad: http.Server;
let badUrl = '';
type Attempt = { at: string; durationMs: number; ok: boolean; statusCode: number | null; error: string | null };

/** The most attempts whose [start, start + latency) overlap at one moment (an end sorts before a start at the same ms). */
function mostAtOnce(attempts: Attempt[]): number {
  const edges = attempts.flatMap((a) => {
    const start = Date.parse(a.at);
    return [
      { t: start, d: 1 },
      { t: start + a.durationMs, d: -1 },
    ];
  });
  edges.sort((x, y) => x.t - y.t || x.d - y.d);
  let now = 0;
  let most = 0;
  for (const e of edges) {
    now += e.d;
    most = Math.max(most, now);
  }
  return most;
}

/** Requests the hanging receiver holds right now, and the most it ever held at once. */
let hanging = 0;
let maxHanging = 0;

beforeAll(async () => {
  const refused = new Set<string>();
  healthy = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const webhookId = String(req.headers['webhook-id']);
      let body: any;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        body = undefined;
      }
      const status = refused.size < 10 && !refused.has(webhookId) ? (refused.add(webhookId), 503) : 200;
      answered.push({ webhookId, tenantId: body?.tenantId, eventId: body?.data?.event?.id, status });
      res.writeHead(status, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => healthy.listen(0, '127.0.0.1', r));
  healthyUrl = `http://127.0.0.1:${(healthy.address() as AddressInfo).port}/hook`;
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
  stack = await startPrivateStack({
    name: 'receiver-limits',
    services: ['management', 'run-auth', 'events-ingest', 'webhook-dispatcher'],
    healthPorts: true,
    env: {
      ALLOW_LOOPBACK_WEBHOOKS: 'true',
      AUTH_FAILURE_LIMIT_PER_IP: '1000000',
      WEBHOOK_CONCURRENCY: '8',
      WEBHOOK_MAX_IN_FLIGHT_PER_DESTINATION: String(CAP),
      WEBHOOK_TIMEOUT_MS: '2000',
      WEBHOOK_CONNECT_TIMEOUT_MS: '1000',
      // The first retry comes soon, the second much later: failed attempts stay visible as "retry scheduled".
      WEBHOOK_RETRY_SCHEDULE_MS: '300,120000',
      WEBHOOK_RETRY_JITTER: '0',
      WEBHOOK_CAP_WAIT_MS: '100',
      OUTBOX_SWEEP_MS: '500',
    },
  });
  admin = stack.admin;
}, 240_000);

afterAll(async () => {
  await stack?.stop();
  healthy?.closeAllConnections();
  if (healthy) await new Promise<void>((r) => healthy.close(() => r()));
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
  // The healthy receiver refuses the first attempt of its first 10 deliveries, so part of its work also goes
  // through the retry poller, where it competes with the bad destinations' retries for the dispatcher's 8 slots.
  const healthyId = await create('healthy', healthyUrl);

  const { key } = await anApiKey(admin, p);
  const run = client(stack.gatewayUrl, key);
  for (let i = 0; i < N; i++)
    expect((await run.post('/run/v1/events', { id: `lim-${i}`, type: 'limits.tested' })).status).toBe(201);

  const ok = () => answered.filter((a) => a.tenantId === p.tenantId && a.status === 200);
  await eventually(
    () => new Set(ok().map((a) => a.eventId)).size === N,
    `all ${N} events delivered to the healthy destination`,
    60_000,
  );

  const dispatcher = stack.process('webhook-dispatcher');
  // The dispatcher answers its health check while the hanging receiver holds sends.
  expect((await fetch(`${dispatcher.healthUrl}/healthz`, { signal: AbortSignal.timeout(5000) })).status).toBe(200);

  const deliveries = async (destinationId: string) => {
    const res = await admin.get(`${P}/webhook-destinations/${destinationId}/deliveries?limit=100`);
    expect(res.status).toBe(200);
    return res.body as {
      data: Array<{ status: string; attemptCount: number; nextAttemptAt: string | null; attempts: Attempt[] }>;
      pagination: { total: number };
    };
  };
  // Every event has its delivery record for each bad destination: none lost while they waited for a slot.
  // The endless-body receiver answers 500 at once: each delivery gets a failed attempt and a retry scheduled.
  await eventually(
    async () => {
      const d = await deliveries(hugeId);
      return (
        d.pagination.total === N &&
        d.data.every(
          (x) =>
            x.status === 'pending' &&
            x.nextAttemptAt &&
            x.attempts.length > 0 &&
            x.attempts.every((a) => !a.ok && a.statusCode === 500),
        )
      );
    },
    'a failed attempt (500) and a scheduled retry on every delivery to the endless-body receiver',
    60_000,
  );
  // The hanging receiver's attempts time out one cap-full at a time: failed attempts with retries scheduled.
  await eventually(
    async () => {
      const d = await deliveries(hangId);
      const timedOut = d.data.filter(
        (x) =>
          x.status === 'pending' &&
          x.nextAttemptAt &&
          x.attempts.length > 0 &&
          x.attempts.every((a) => !a.ok && /timed out/.test(a.error ?? '')),
      );
      return d.pagination.total === N && timedOut.length >= CAP;
    },
    'timed-out attempts with retries scheduled on deliveries to the hanging receiver',
    60_000,
  );
  expect(maxHanging).toBeGreaterThan(0);
  // At most CAP sends to the hanging receiver at any moment, read from the dispatcher's own attempt log (start and
  // latency of each). Not from the receiver's count of open requests: it hears of a timed-out send's closed socket
  // an event-loop turn after the next send may already have arrived, so it can briefly count CAP + 1.
  const hangAttempts = (await deliveries(hangId)).data.flatMap((d) => d.attempts);
  expect(hangAttempts.length).toBeGreaterThan(CAP);
  expect(mostAtOnce(hangAttempts)).toBeLessThanOrEqual(CAP);

  // The cap is visible to operators: deliveries were put back to wait, and the metrics endpoint answers.
  const metrics = await fetch(`${dispatcher.healthUrl}/metrics`, { signal: AbortSignal.timeout(5000) });
  expect(metrics.status).toBe(200);
  const waits = /^webhook_destination_cap_waits_total(?:\{[^}]*\})? (\d+)/m.exec(await metrics.text());
  expect(Number(waits?.[1] ?? 0)).toBeGreaterThan(0);
  // Each delivery was accepted by the healthy receiver once (none sent again after its success), and its log (an
  // attempt is recorded just after the receiver answered it) shows every delivery delivered by one successful attempt.
  expect(new Set(ok().map((a) => a.webhookId)).size).toBe(ok().length);
  let unlike: unknown[] = [];
  await eventually(
    async () => {
      const good = await deliveries(healthyId);
      unlike = good.data.filter((x) => !(x.status === 'delivered' && x.attempts.filter((a) => a.ok).length === 1));
      return good.pagination.total === N && unlike.length === 0;
    },
    `all ${N} deliveries to the healthy destination recorded as delivered by one successful attempt`,
    30_000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; not so: ${JSON.stringify(unlike)}`);
  });
}, 240_000);
