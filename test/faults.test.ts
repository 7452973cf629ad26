import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import {
  adminClient,
  anApiKey,
  anApp,
  aProject,
  ensureInfra,
  eventually,
  freePort,
  http,
  localSecrets,
  removeNatsStore,
  repoRoot,
  solveChallenge,
  startNatsServer,
  startStack,
  trackChild,
  withDatabase,
  dropDatabases,
  type NatsServer,
  type Stack,
} from '@platform/testkit';

/**
 * A stack of its own (private NATS and a private Redis) so both can be stopped without touching the shared ones.
 * Timeouts are short so a fault shows within seconds.
 */
const TIMEOUT_MS = 5000;
let nats: NatsServer;
let stack: Stack;
let adminToken: string;
let redisPort: number;
let redis: ChildProcess | undefined;

async function startRedis(): Promise<void> {
  redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  trackChild(redis);
  await eventually(async () => {
    const { connect } = await import('node:net');
    return new Promise<boolean>((resolve) => {
      const s = connect(redisPort, '127.0.0.1', () => (s.destroy(), resolve(true)));
      s.on('error', () => resolve(false));
    });
  }, 'redis to listen', 10_000);
}

async function stopRedis(): Promise<void> {
  const r = redis;
  if (!r || r.exitCode !== null) return;
  await new Promise<void>((resolve) => {
    r.once('exit', () => resolve());
    r.kill('SIGKILL');
  });
}

beforeAll(async () => {
  const shared = ensureInfra();
  nats = await startNatsServer();
  redisPort = await freePort();
  await startRedis();
  const secrets = localSecrets();
  adminToken = secrets.ADMIN_TOKEN!;
  const runId = Date.now().toString(36);
  stack = await startStack({
    infra: { ...shared, NATS_URL: nats.url, REDIS_URL: `redis://127.0.0.1:${redisPort}` },
    services: ['management', 'run-auth', 'events-ingest'],
    logDir: join(repoRoot, '.infra', 'test-logs', `faults-${runId}`),
    env: { ...secrets, MONGO_DB_PREFIX: `faults${runId}`, LOG_LEVEL: 'warn', REDIS_KEY_PREFIX: `faults:${runId}:`, NATS_REQUEST_TIMEOUT_MS: String(TIMEOUT_MS), OUTBOX_SWEEP_MS: '500' },
  });
}, 360_000);

afterAll(async () => {
  await stack?.stop();
  if (stack) await dropDatabases(stack.env.MONGO_URL!, stack.env.MONGO_DB_PREFIX!).catch(() => undefined);
  await stopRedis();
  if (nats) {
    await nats.stop();
    removeNatsStore(nats);
  }
});

test('when NATS is stopped during steady event ingest, then the gateway answers 503 problem+json within its timeout, recovers by itself, and every acknowledged event is stored once', async () => {
  const admin = adminClient({ gatewayUrl: stack.gatewayUrl, adminToken });
  const p = aProject();
  const { key } = await anApiKey(admin, p);
  const acked = new Set<string>();
  const outage: Array<{ status: number; type: string; ms: number }> = [];
  let phase: 'before' | 'down' | 'after' = 'before';
  let n = 0;
  let stop = false;
  const worker = async () => {
    while (!stop) {
      const id = `fault-${n++}`;
      const started = Date.now();
      try {
        const res = await http('POST', `${stack.gatewayUrl}/run/v1/events`, { token: key, json: { id, type: 'fault.tested' } });
        if (res.status === 201 || res.status === 200) acked.add(id);
        else if (phase === 'down') outage.push({ status: res.status, type: res.contentType, ms: Date.now() - started });
      } catch {
        outage.push({ status: 0, type: 'connection failed', ms: Date.now() - started });
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  const workers = Array.from({ length: 4 }, worker);
  await eventually(() => acked.size >= 40, '40 events before the fault', 30_000);
  phase = 'down';
  await nats.stop();
  await new Promise((r) => setTimeout(r, 8000));
  await nats.start();
  phase = 'after';
  const ackedAtRestart = acked.size;
  await eventually(() => acked.size >= ackedAtRestart + 40, 'events accepted again after NATS is back', 60_000);
  stop = true;
  await Promise.all(workers);

  expect(outage.length).toBeGreaterThan(0);
  for (const o of outage) {
    expect([503, 504]).toContain(o.status);
    expect(o.type).toMatch(/application\/problem\+json/);
    // No hanging connection: the answer came within the NATS timeout plus scheduling slack.
    expect(o.ms).toBeLessThan(TIMEOUT_MS + 8000);
  }
  const stored = await withDatabase(stack.env.MONGO_URL!, 'events-ingest', async (db) => db.collection('runEvents').find({ tenantId: p.tenantId, projectId: p.projectId }, { projection: { id: 1, _id: 1 } }).toArray(), stack.env.MONGO_DB_PREFIX);
  const storedIds = stored.map((r) => String((r as { id?: string }).id ?? r._id).split(':').pop()!);
  const missing = [...acked].filter((id) => !storedIds.includes(id));
  expect(missing).toEqual([]);
  expect(new Set(storedIds).size).toBe(storedIds.length);
}, 180_000);

test('when Redis is stopped, then challenge verification fails closed with 503, rate-limited operations stay open, and both recover without a restart', async () => {
  const admin = adminClient({ gatewayUrl: stack.gatewayUrl, adminToken });
  const app = await anApp(admin, aProject());
  const ORIGIN = 'https://app.example.com';
  const get = (path: string) => http('GET', `${stack.gatewayUrl}${path}`, { headers: { origin: ORIGIN } });
  const verify = (body: unknown) => http('POST', `${stack.gatewayUrl}/run/auth/challenge/verify?appId=${app.id}`, { json: body, headers: { origin: ORIGIN } });
  const issued = await get(`/run/auth/challenge?appId=${app.id}`);
  expect(issued.status).toBe(200);
  const solution = solveChallenge(issued.body);

  await stopRedis();
  const down = await verify(solution);
  expect(down.status).toBe(503);
  expect(down.contentType).toMatch(/application\/problem\+json/);
  // Rate limiting fails open: the gateway keeps answering.
  expect((await http('GET', `${stack.gatewayUrl}/ping`)).status).toBe(200);
  const p = aProject();
  expect((await admin.get(`/manage/tenants/${p.tenantId}/projects/${p.projectId}/api-keys`)).status).toBe(200);
  // So does the failed-authentication lockout: a bad credential is still checked and answered 401.
  expect((await http('GET', `${stack.gatewayUrl}/manage/tenants/${p.tenantId}/projects/${p.projectId}/api-keys`, { token: 'mt_wrong_while_redis_is_down' })).status).toBe(401);

  await startRedis();
  // Recovery without a restart: a fresh challenge issues and verifies once Redis is back.
  const back = await eventually(async () => {
    const fresh = await get(`/run/auth/challenge?appId=${app.id}`);
    if (fresh.status !== 200) return undefined;
    const res = await verify(solveChallenge(fresh.body));
    return res.status === 200 ? res : undefined;
  }, 'challenge issue and verification after Redis is back', 30_000);
  expect(back.body).toEqual({ verified: true });
  // The challenge issued before the outage had its replay record in the lost Redis: it is never accepted.
  expect((await verify(solution)).body).toEqual({ verified: false, reason: 'already_used' });
}, 120_000);
