import { join } from 'node:path';
import type { NatsConnection } from 'nats';
import { createFeedback, createRunEvent, ping } from '@platform/contracts';
import {
  connectAs,
  adminClient,
  aProject,
  anApiKey,
  ensureInfra,
  eventually,
  http,
  localSecrets,
  projectPath,
  repoRoot,
  startNatsServer,
  startStack,
  uniqueId,
  withDatabase,
  type Client,
  type HttpResult,
  type NatsServer,
  type ServiceProcess,
  type Stack,
} from '@platform/testkit';
import { platformClient } from '@platform/client';
import { sample, scrape } from '../support/metrics';

/**
 * Replicas that stall or die between receiving a request and answering it, on a stack of its own (its own NATS, so a
 * stalled replica harms no other test). A stalled replica is one stopped with SIGSTOP: NATS still hands it requests,
 * it answers none. A "tap" (a plain NATS subscriber next to the queue group) sees every attempt the gateway sends.
 */
let nats: NatsServer;
let stack: Stack;
let secrets: Record<string, string>;
let admin: Client;
let tap: NatsConnection;
const run = `deploys-${Date.now().toString(36)}`;

beforeAll(async () => {
  const shared = ensureInfra();
  nats = await startNatsServer();
  secrets = localSecrets();
  stack = await startStack({
    infra: { ...shared, NATS_URL: nats.url },
    services: ['management', 'run-auth', 'events-ingest'],
    healthPorts: true,
    logDir: join(repoRoot, '.infra', 'test-logs', run),
    env: {
      ...secrets,
      MONGO_DB_PREFIX: run.replace(/-/g, '_'),
      LOG_LEVEL: 'warn',
      REDIS_KEY_PREFIX: `${run}:`,
      ANALYTICS_PORT: '0',
      // A long deadline with short attempts: a stalled replica is given up on after 1 s, another one started meanwhile.
      NATS_REQUEST_TIMEOUT_MS: '30000',
      RETRY_ATTEMPT_TIMEOUT_MS: '1000',
      SHUTDOWN_GRACE_MS: '5000',
      // The admin token stays verified while management is stalled (its check is a request to management).
      AUTH_CACHE_TTL_MS: '600000',
    },
  });
  admin = adminClient({ gatewayUrl: stack.gatewayUrl, adminToken: secrets.ADMIN_TOKEN! });
  tap = await connectAs(nats.url, 'admin', { name: 'deploys-tap' });
}, 300_000);

afterAll(async () => {
  for (const p of stack?.processes ?? []) p.child.kill('SIGCONT');
  await tap?.close();
  await stack?.stop();
  await nats?.destroy();
});

const replicas = (name: string) => stack.processes.filter((p) => p.name === name);

/** Counts the attempts the gateway sends on `subject` for each request id (from when the server knows the tap). */
async function attemptsOn(subject: string) {
  const seen = new Map<string, number>();
  const sub = tap.subscribe(subject);
  void (async () => {
    for await (const m of sub) {
      const id = m.headers?.get('x-request-id') ?? '';
      seen.set(id, (seen.get(id) ?? 0) + 1);
    }
  })();
  await tap.flush();
  return { of: (requestId: string) => seen.get(requestId) ?? 0, stop: () => sub.unsubscribe() };
}

const stall = (p: ServiceProcess) => p.child.kill('SIGSTOP');
const resume = (p: ServiceProcess) => p.child.kill('SIGCONT');

/** Sends a request with a known request id (so the tap can tell its attempts apart); answers without waiting. */
function send(
  method: string,
  path: string,
  opts: { token?: string; json?: unknown; headers?: Record<string, string> } = {},
): { requestId: string; answer: Promise<HttpResult> } {
  const requestId = uniqueId('req');
  const answer = http(method, `${stack.gatewayUrl}${path}`, {
    ...opts,
    headers: { ...opts.headers, 'x-request-id': requestId },
  });
  return { requestId, answer };
}

async function instanceOf(): Promise<string> {
  const res = await http('GET', `${stack.gatewayUrl}/ping`);
  expect(res.status).toBe(200);
  return res.body.instance as string;
}

test('when the only replica stalls with a read and a second replica starts, then the read is sent again and answered by the second replica', async () => {
  const [first] = replicas('management');
  const firstInstance = await instanceOf();
  const pings = await attemptsOn(ping.subject);
  stall(first!);
  try {
    const read = send('GET', '/ping');
    // The attempt that went to the stalled replica ran out: the gateway sent it again.
    await eventually(() => pings.of(read.requestId) >= 2, 'the read sent a second time', 20_000);
    await stack.startProcess('management');
    const res = await read.answer;
    expect(res.status).toBe(200);
    expect(res.body.instance).not.toBe(firstInstance);
  } finally {
    pings.stop();
    await stack.kill(first!, 'SIGKILL');
  }
}, 120_000);

test('when the replica holding a create without an Idempotency-Key stalls, then the create is never sent again, while a read waiting on the same replica is', async () => {
  const p = aProject();
  const [only] = replicas('management');
  expect((await admin.get(`${projectPath(p)}/feedback`)).status).toBe(200);
  const creates = await attemptsOn(createFeedback.subject);
  const pings = await attemptsOn(ping.subject);
  stall(only!);
  let resumed = false;
  try {
    const create = send('POST', `${projectPath(p)}/feedback`, {
      token: secrets.ADMIN_TOKEN,
      json: { conversationId: 'c1', type: 'positive' },
    });
    const read = send('GET', '/ping');
    await eventually(() => creates.of(create.requestId) >= 1, 'the create delivered');
    // The read's first attempt ran out and it was sent again: the create has waited longer than one attempt.
    await eventually(() => pings.of(read.requestId) >= 2, 'the read sent a second time', 20_000);
    expect(creates.of(create.requestId)).toBe(1);
    resume(only!);
    resumed = true;
    const [created, answered] = await Promise.all([create.answer, read.answer]);
    expect(answered.status).toBe(200);
    expect(created.status).toBe(201);
    expect(creates.of(create.requestId)).toBe(1);
    const listed = await admin.get(`${projectPath(p)}/feedback`);
    expect(listed.status).toBe(200);
    expect(listed.body.data).toHaveLength(1);
  } finally {
    if (!resumed) resume(only!);
    creates.stop();
    pings.stop();
  }
}, 120_000);

test('when the replica holding an event with an id stalls, then the event is answered by another replica and stored once, and the stalled replica, woken past the deadline, drops its copies', async () => {
  const p = aProject();
  const { key } = await anApiKey(admin, p, { agentId: 'deploy-agent' });
  const [first] = replicas('events-ingest');
  const events = await attemptsOn(createRunEvent.subject);
  const lateDropped = async () =>
    sample(await scrape(first!.healthUrl), 'nats_requests_refused_total', {
      subject: createRunEvent.subject,
      reason: 'late',
    }) ?? 0;
  const before = await lateDropped();
  stall(first!);
  try {
    const event = send('POST', '/run/v1/events', { token: key, json: { id: 'deploy-1', type: 'deploy.tested' } });
    await eventually(() => events.of(event.requestId) >= 2, 'the event sent a second time', 20_000);
    await stack.startProcess('events-ingest');
    const res = await event.answer;
    expect(res.status).toBe(201);
    expect(res.body.data.id).toBe('deploy-1');
    // The stalled replica wakes up after the copies' deadline (x-deadline): it drops them, its caller has given up.
    resume(first!);
    await eventually(async () => (await lateDropped()) > before, 'the stalled replica dropped its late copy', 20_000);
  } finally {
    resume(first!);
    events.stop();
    await stack.kill(first!, 'SIGKILL');
  }
  const stored = await withDatabase(
    stack.env.MONGO_URL!,
    'events-ingest',
    (db) => db.collection('runEvents').find({ tenantId: p.tenantId, projectId: p.projectId }).toArray(),
    run.replace(/-/g, '_'),
  );
  expect(stored.map((d) => String(d._id).split(':').pop())).toEqual(['deploy-1']);
}, 120_000);

describe('Idempotency-Key', () => {
  const createWithKey = (p: { tenantId: string; projectId: string }, key: string, json: unknown) =>
    http('POST', `${stack.gatewayUrl}${projectPath(p)}/feedback`, {
      token: secrets.ADMIN_TOKEN,
      json,
      headers: { 'idempotency-key': key },
    });

  test('when a create is sent again with the same key and body, then it answers the first result and stores one', async () => {
    const p = aProject();
    const key = uniqueId('idem');
    const first = await createWithKey(p, key, { conversationId: 'c1', type: 'positive' });
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    // The same body with its keys in another order is the same request.
    const again = await createWithKey(p, key, { type: 'positive', conversationId: 'c1' });
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    const listed = await admin.get(`${projectPath(p)}/feedback`);
    expect(listed.body.data.map((f: { id: string }) => f.id)).toEqual([first.body.data.id]);
    // Another tenant's key space is its own: the same key there is a new create.
    const other = aProject();
    const elsewhere = await createWithKey(other, key, { conversationId: 'c1', type: 'positive' });
    expect(elsewhere.status).toBe(201);
    expect(elsewhere.body.data.id).not.toBe(first.body.data.id);
  });

  test('when a key is used again with a different body, then it answers 422 problem+json and stores nothing', async () => {
    const p = aProject();
    const key = uniqueId('idem');
    expect((await createWithKey(p, key, { conversationId: 'c1', type: 'positive' })).status).toBe(201);
    const res = await createWithKey(p, key, { conversationId: 'c1', type: 'negative' });
    expect(res.status).toBe(422);
    expect(res.contentType).toMatch(/application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 422, code: 'unprocessable_entity' });
    const listed = await admin.get(`${projectPath(p)}/feedback`);
    expect(listed.body.data.map((f: { type: string }) => f.type)).toEqual(['positive']);
  });

  test('when a malformed key is sent, then it answers 400 and stores nothing', async () => {
    const p = aProject();
    const res = await createWithKey(p, 'not a key', { conversationId: 'c1', type: 'positive' });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ pointer: '/headers/idempotency-key' })]);
    expect((await admin.get(`${projectPath(p)}/feedback`)).body.data).toEqual([]);
  });

  test('when a request with a key is still in flight, then the same key answers 409, and the first result once it is done', async () => {
    const p = aProject();
    const key = uniqueId('idem');
    const [only] = replicas('management');
    expect((await admin.get(`${projectPath(p)}/feedback`)).status).toBe(200);
    const creates = await attemptsOn(createFeedback.subject);
    stall(only!);
    let resumed = false;
    try {
      const first = send('POST', `${projectPath(p)}/feedback`, {
        token: secrets.ADMIN_TOKEN,
        json: { conversationId: 'c1', type: 'positive' },
        headers: { 'idempotency-key': key },
      });
      await eventually(() => creates.of(first.requestId) >= 1, 'the first create delivered');
      const during = await createWithKey(p, key, { conversationId: 'c1', type: 'positive' });
      expect(during.status).toBe(409);
      expect(during.body).toMatchObject({ status: 409, code: 'conflict' });
      expect(during.headers.get('retry-after')).toBe('1');
      // A different body is refused even while the first is in flight.
      expect((await createWithKey(p, key, { conversationId: 'c2', type: 'positive' })).status).toBe(422);
      resume(only!);
      resumed = true;
      const done = await first.answer;
      expect(done.status).toBe(201);
      const after = await createWithKey(p, key, { conversationId: 'c1', type: 'positive' });
      expect(after.status).toBe(201);
      expect(after.body).toEqual(done.body);
      expect((await admin.get(`${projectPath(p)}/feedback`)).body.data).toHaveLength(1);
    } finally {
      if (!resumed) resume(only!);
      creates.stop();
    }
  }, 120_000);
});

test('when the typed client creates, then it sends a new Idempotency-Key each time (none on reads), and a create with the same key is answered once', async () => {
  const p = aProject();
  const sent: Array<{ method: string; key: string | null }> = [];
  const api = platformClient({
    baseUrl: stack.gatewayUrl,
    token: secrets.ADMIN_TOKEN,
    fetch: (url, init) => {
      sent.push({ method: String(init?.method), key: new Headers(init?.headers).get('idempotency-key') });
      return fetch(url, init);
    },
  });
  const params = { tenantId: p.tenantId, projectId: p.projectId };
  const a = await api.createFeedback({ params, body: { conversationId: 'c1', type: 'positive' } });
  const b = await api.createFeedback({ params, body: { conversationId: 'c1', type: 'positive' } });
  expect(a.data.id).not.toBe(b.data.id);
  const c = await api.createFeedback({
    params,
    body: { conversationId: 'c2', type: 'positive' },
    idempotencyKey: 'client-key-1',
  });
  const d = await api.createFeedback({
    params,
    body: { conversationId: 'c2', type: 'positive' },
    idempotencyKey: 'client-key-1',
  });
  expect(d).toEqual(c);
  await api.listFeedback({ params });
  expect(sent.map((s) => s.method)).toEqual(['POST', 'POST', 'POST', 'POST', 'GET']);
  expect(sent[0]!.key).toMatch(/^[0-9a-f-]{36}$/);
  expect(sent[1]!.key).toMatch(/^[0-9a-f-]{36}$/);
  expect(sent[0]!.key).not.toBe(sent[1]!.key);
  expect(sent.slice(2, 4).map((s) => s.key)).toEqual(['client-key-1', 'client-key-1']);
  expect(sent[4]!.key).toBeNull();
  expect(await api.listAll(api.ops.listFeedback, { params })).toHaveLength(3);
});
