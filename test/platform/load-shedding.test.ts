import {
  aProject,
  ensureInfra,
  eventually,
  http,
  type HttpResult,
  startPrivateStack,
  startTcpProxy,
  type PrivateStack,
  type TcpProxy,
} from '@platform/testkit';

/**
 * A stack of its own whose management reaches the database through a TCP proxy that can hold every answer back (a
 * slow database), and serves at most 2 requests at once (BUS_MAX_IN_FLIGHT).
 */
let proxy: TcpProxy;
let stack: PrivateStack;

beforeAll(async () => {
  const mongoUrl = ensureInfra().MONGO_URL;
  const db = new URL(mongoUrl);
  proxy = await startTcpProxy({ host: db.hostname, port: Number(db.port) });
  stack = await startPrivateStack({
    name: 'shedding',
    services: ['management', 'run-auth'],
    serviceEnv: {
      management: { MONGO_URL: mongoUrl.replace(db.host, `127.0.0.1:${proxy.port}`), BUS_MAX_IN_FLIGHT: '2' },
    },
    env: { NATS_REQUEST_TIMEOUT_MS: '20000' },
  });
}, 360_000);

afterAll(async () => {
  await stack?.stop();
  await proxy?.close();
});

test('when the database is slow and more creates come than a service serves at once, then the others are answered 503 with Retry-After at once, and every accepted create is stored', async () => {
  const p = aProject();
  const path = `${stack.gatewayUrl}/manage/tenants/${p.tenantId}/projects/${p.projectId}/feedback`;
  const answers: Array<{ id: string; res: HttpResult }> = [];
  let n = 0;
  proxy.delay(300);
  try {
    // Rounds of 8 creates at once until one is shed (the first round, unless the machine is very slow).
    await eventually(
      async () => {
        const ids = Array.from({ length: 8 }, () => `shed-${n++}`);
        const round = await Promise.all(
          ids.map(async (id) => ({
            id,
            res: await http('POST', path, {
              token: stack.adminToken,
              json: { id, conversationId: 'c', type: 'positive' },
            }),
          })),
        );
        answers.push(...round);
        return round.some((a) => a.res.status === 503);
      },
      'a create shed while management is at its bound',
      60_000,
    );
  } finally {
    proxy.delay(0);
  }
  const shed = answers.filter((a) => a.res.status === 503);
  const accepted = answers.filter((a) => a.res.status === 201).map((a) => a.id);
  expect(shed.length).toBeGreaterThan(0);
  expect(accepted.length).toBeGreaterThan(0);
  expect(shed.length + accepted.length).toBe(answers.length);
  for (const { res } of shed) {
    expect(res.contentType).toMatch(/application\/problem\+json/);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(res.body).toMatchObject({ status: 503, code: 'service_unavailable' });
  }
  // Every accepted create is stored; a shed one is not (it was never started), so sending it again is safe.
  const listed = await stack.admin.get(`/manage/tenants/${p.tenantId}/projects/${p.projectId}/feedback?limit=100`);
  expect(listed.body.data.map((f: { id: string }) => f.id).sort()).toEqual([...accepted].sort());
}, 180_000);
