import {
  anApiKey,
  anApp,
  aProject,
  eventually,
  http,
  solveChallenge,
  startPrivateStack,
  withDatabase,
  type PrivateStack,
} from '@platform/testkit';

/**
 * A stack of its own (private NATS and a private Redis) so both can be stopped without touching the shared ones.
 * Timeouts are short so a fault shows within seconds.
 */
const TIMEOUT_MS = 5000;
let stack: PrivateStack;

beforeAll(async () => {
  stack = await startPrivateStack({
    name: 'faults',
    services: ['management', 'run-auth', 'events-ingest'],
    privateRedis: true,
    env: { NATS_REQUEST_TIMEOUT_MS: String(TIMEOUT_MS), OUTBOX_SWEEP_MS: '500' },
  });
}, 360_000);

afterAll(() => stack?.stop());

test('when NATS is stopped during steady event ingest, then the gateway keeps answering 503 problem+json while NATS is down (no request waits for NATS to return), recovers by itself, and every acknowledged event is stored once', async () => {
  const admin = stack.admin;
  const p = aProject();
  const { key } = await anApiKey(admin, p);
  const acked = new Set<string>();
  const outage: Array<{ status: number; type: string }> = [];
  let phase: 'before' | 'down' | 'after' = 'before';
  let n = 0;
  let stop = false;
  const worker = async () => {
    while (!stop) {
      const id = `fault-${n++}`;
      try {
        const res = await http('POST', `${stack.gatewayUrl}/run/v1/events`, {
          token: key,
          json: { id, type: 'fault.tested' },
        });
        if (res.status === 201 || res.status === 200) acked.add(id);
        else if (phase === 'down') outage.push({ status: res.status, type: res.contentType });
      } catch {
        outage.push({ status: 0, type: 'connection failed' });
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const workers = Array.from({ length: 4 }, worker);
  await eventually(() => acked.size >= 40, '40 events before the fault', 30_000);
  phase = 'down';
  await stack.nats!.stop();
  // While NATS is down, every client keeps getting answers (no request hangs until NATS is back): two per worker.
  await eventually(() => outage.length >= 8, 'answers from the gateway while NATS is down', 60_000);
  await stack.nats!.start();
  phase = 'after';
  const ackedAtRestart = acked.size;
  await eventually(() => acked.size >= ackedAtRestart + 40, 'events accepted again after NATS is back', 60_000);
  stop = true;
  await Promise.all(workers);

  expect(outage.length).toBeGreaterThan(0);
  for (const o of outage) {
    expect([503, 504]).toContain(o.status);
    expect(o.type).toMatch(/application\/problem\+json/);
  }
  const stored = await withDatabase(
    stack.env.MONGO_URL!,
    'events-ingest',
    async (db) =>
      db
        .collection('runEvents')
        .find({ tenantId: p.tenantId, projectId: p.projectId }, { projection: { id: 1, _id: 1 } })
        .toArray(),
    stack.dbPrefix,
  );
  const storedIds = stored.map(
    (r) =>
      String((r as { id?: string }).id ?? r._id)
        .split(':')
        .pop()!,
  );
  const missing = [...acked].filter((id) => !storedIds.includes(id));
  expect(missing).toEqual([]);
  expect(new Set(storedIds).size).toBe(storedIds.length);
}, 180_000);

test('when Redis is stopped, then challenge verification fails closed with 503, rate-limited operations stay open, and both recover without a restart', async () => {
  const admin = stack.admin;
  const app = await anApp(admin, aProject());
  const ORIGIN = 'https://app.example.com';
  const get = (path: string) => http('GET', `${stack.gatewayUrl}${path}`, { headers: { origin: ORIGIN } });
  const verify = (body: unknown) =>
    http('POST', `${stack.gatewayUrl}/run/auth/challenge/verify?appId=${app.id}`, {
      json: body,
      headers: { origin: ORIGIN },
    });
  const issued = await get(`/run/auth/challenge?appId=${app.id}`);
  expect(issued.status).toBe(200);
  const solution = solveChallenge(issued.body);

  await stack.redis!.stop();
  const down = await verify(solution);
  expect(down.status).toBe(503);
  expect(down.contentType).toMatch(/application\/problem\+json/);
  // Rate limiting fails open: the gateway keeps answering.
  expect((await http('GET', `${stack.gatewayUrl}/ping`)).status).toBe(200);
  const p = aProject();
  expect((await admin.get(`/manage/tenants/${p.tenantId}/projects/${p.projectId}/api-keys`)).status).toBe(200);
  // So does the failed-authentication lockout: a bad credential is still checked and answered 401.
  expect(
    (
      await http('GET', `${stack.gatewayUrl}/manage/tenants/${p.tenantId}/projects/${p.projectId}/api-keys`, {
        token: 'mt_wrong_while_redis_is_down',
      })
    ).status,
  ).toBe(401);

  await stack.redis!.start();
  // Recovery without a restart: a fresh challenge issues and verifies once Redis is back.
  const back = await eventually(
    async () => {
      const fresh = await get(`/run/auth/challenge?appId=${app.id}`);
      if (fresh.status !== 200) return undefined;
      const res = await verify(solveChallenge(fresh.body));
      return res.status === 200 ? res : undefined;
    },
    'challenge issue and verification after Redis is back',
    30_000,
  );
  expect(back.body).toEqual({ verified: true });
  // The challenge issued before the outage had its replay record in the lost Redis: it is never accepted.
  expect((await verify(solution)).body).toEqual({ verified: false, reason: 'already_used' });
}, 120_000);
