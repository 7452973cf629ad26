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
  const project = aProject();
  const app = await anApp(admin, project);
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
  const tokenOf = await admin.post(`/manage/tenants/${project.tenantId}/access-tokens`, {
    name: 'faults',
    role: 'admin',
  });
  expect(tokenOf.status).toBe(201);
  const opened = await http('POST', `${stack.gatewayUrl}/manage/auth/session`, { token: tokenOf.body.data.token });
  expect(opened.status).toBe(201);
  const cookie = (opened.headers.get('set-cookie') ?? '').split(';')[0]!;

  await stack.redis!.stop();
  // A session cookie cannot be checked without its store: 503 with Retry-After (fails closed), never a 500 or a pass.
  const withSession = await http('GET', `${stack.gatewayUrl}/manage/auth/sessions`, { cookie });
  expect(withSession.status).toBe(503);
  expect(withSession.headers.get('retry-after')).toBe('1');
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

test('when Redis restarts empty between a create with an Idempotency-Key and its retry, then the retry creates nothing (409: served, its answer no longer kept) and one record is stored', async () => {
  const p = aProject();
  const path = `${stack.gatewayUrl}/manage/tenants/${p.tenantId}/projects/${p.projectId}/feedback`;
  const key = `redis-lost-${Date.now().toString(36)}`;
  const create = () =>
    http('POST', path, {
      token: stack.adminToken,
      json: { conversationId: 'c1', type: 'positive' },
      headers: { 'idempotency-key': key },
    });
  const first = await create();
  expect(first.status).toBe(201);

  // The answers Redis kept are gone (a memory-only Redis restarted).
  await stack.redis!.stop();
  await stack.redis!.start();
  const retried = await eventually(
    async () => {
      const res = await create();
      return res.status === 503 ? undefined : res;
    },
    'an answer other than 503 once Redis is back',
    30_000,
  );
  expect(retried.status).toBe(409);
  expect(retried.contentType).toMatch(/application\/problem\+json/);
  expect(retried.body).toMatchObject({ status: 409, code: 'conflict' });
  const listed = await stack.admin.get(`/manage/tenants/${p.tenantId}/projects/${p.projectId}/feedback`);
  expect(listed.body.data.map((f: { id: string }) => f.id)).toEqual([first.body.data.id]);
  // A new key is a new create, as ever.
  const other = await http('POST', path, {
    token: stack.adminToken,
    json: { conversationId: 'c1', type: 'positive' },
    headers: { 'idempotency-key': `${key}-2` },
  });
  expect(other.status).toBe(201);
}, 120_000);
