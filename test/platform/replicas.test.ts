import type { ServiceName } from '@platform/contracts';
import {
  aProject,
  anApiKey,
  client,
  eventually,
  http,
  projectPath,
  startPrivateStack,
  startReceiver,
  type Client,
  type PrivateStack,
  type Receiver,
} from '@platform/testkit';
import { sample, scrape } from '../support/metrics';
import { createDestination } from '../support/webhooks';

/**
 * A stack of its own with two replicas each of management and webhook-dispatcher, and two gateways, so replicas can be
 * terminated and killed without touching the shared test stack.
 */
let stack: PrivateStack;
let admin: Client;

beforeAll(async () => {
  stack = await startPrivateStack({
    name: 'replicas',
    services: ['management', 'run-auth', 'events-ingest', 'webhook-dispatcher'],
    replicas: { management: 2, 'webhook-dispatcher': 2, gateway: 2 },
    healthPorts: true,
    env: {
      ANALYTICS_PORT: '0',
      ALLOW_LOOPBACK_WEBHOOKS: 'true',
      NATS_REQUEST_TIMEOUT_MS: '3000',
      WEBHOOK_RETRY_SCHEDULE_MS: '300,600,1200',
      WEBHOOK_CAP_WAIT_MS: '100',
      // Long enough that a receiver slowed by a loaded machine is not timed out: a timed-out attempt the receiver did
      // get is retried (at least once, by design), and the exactly-once test below would count it twice.
      WEBHOOK_TIMEOUT_MS: '8000',
      WEBHOOK_TEST_TIMEOUT_MS: '1000',
      SHUTDOWN_GRACE_MS: '10000',
      SHUTDOWN_DELAY_MS: '1500',
    },
  });
  admin = stack.admin;
}, 300_000);

afterAll(() => stack?.stop());

const replicas = (name: ServiceName) => stack.replicas(name);

/** Posts run events `ids` with `workers` clients at once; a refused or failed post is retried until accepted. */
async function postAll(key: string, ids: string[], workers = 8, onAccepted?: (n: number) => void): Promise<number> {
  const run = client(stack.gatewayUrl, key);
  let next = 0;
  let accepted = 0;
  const worker = async () => {
    while (next < ids.length) {
      const id = ids[next++]!;
      await eventually(
        async () => {
          const res = await run.post('/run/v1/events', { id, type: 'replica.tested' }).catch(() => undefined);
          return res?.status === 201 || res?.status === 200;
        },
        `event ${id} accepted`,
        120_000,
      );
      accepted++;
      onAccepted?.(accepted);
    }
  };
  await Promise.all(Array.from({ length: workers }, worker));
  return accepted;
}

const delivered = (r: Receiver, tenantId: string) =>
  r.received.filter((x) => x.json?.tenantId === tenantId).map((x) => x.json.data.event.id as string);

test('when requests arrive, then both management replicas serve them (one queue group)', async () => {
  const instances = new Set<string>();
  for (let i = 0; i < 40 && instances.size < 2; i++) {
    const res = await http('GET', `${stack.gatewayUrl}/ping`);
    expect(res.status).toBe(200);
    instances.add(res.body.instance as string);
  }
  expect(instances.size).toBe(2);
});

// Management keeps pages of the key list in memory while the project's keys are unchanged; a change made through one
// replica must show on the next list of every replica (both have the old page cached before each change).
test('when API keys change through one management replica, then the next list on either replica shows the change', async () => {
  const p = aProject();
  const keys = `${projectPath(p)}/api-keys?page=1&limit=10`;
  /** 20 lists (both replicas answer some); each one's rows by id. */
  const listTwenty = async () =>
    Promise.all(
      Array.from({ length: 20 }, async () => {
        const res = await admin.get(keys);
        expect(res.status).toBe(200);
        return {
          total: res.body.pagination.total as number,
          byId: new Map(
            (res.body.data as Array<{ id: string; name: string; lastUsedAt: string | null }>).map((k) => [k.id, k]),
          ),
        };
      }),
    );
  const first = await anApiKey(admin, p, { name: 'first' });
  for (const l of await listTwenty()) expect([...l.byId.keys()]).toEqual([first.apiKey.id]);

  const second = await anApiKey(admin, p, { name: 'second' });
  for (const l of await listTwenty()) expect([l.total, l.byId.has(second.apiKey.id)]).toEqual([2, true]);

  expect((await admin.patch(`${projectPath(p)}/api-keys/${first.apiKey.id}`, { name: 'renamed' })).status).toBe(200);
  for (const l of await listTwenty()) expect(l.byId.get(first.apiKey.id)?.name).toBe('renamed');

  expect((await admin.delete(`${projectPath(p)}/api-keys/${second.apiKey.id}`)).status).toBe(204);
  for (const l of await listTwenty()) expect([l.total, l.byId.has(second.apiKey.id)]).toEqual([1, false]);

  // A key's first use is recorded after its request is answered; once one list shows it, every list does.
  expect((await client(stack.gatewayUrl, first.key).post('/run/v1/events', { type: 'used' })).status).toBe(201);
  await eventually(
    async () => (await listTwenty()).some((l) => l.byId.get(first.apiKey.id)?.lastUsedAt != null),
    'lastUsedAt listed',
  );
  for (const l of await listTwenty()) expect(l.byId.get(first.apiKey.id)?.lastUsedAt).not.toBeNull();
});

test('when events are posted, then each is delivered exactly once to each destination, with two dispatcher replicas sharing the consumers', async () => {
  const p = aProject();
  const { key } = await anApiKey(admin, p, { agentId: 'replica-agent' });
  const [a, b] = [await startReceiver(), await startReceiver()];
  try {
    for (const r of [a, b]) await createDestination(admin, p, { name: 'r', url: r.url, eventTypes: ['event.created'] });
    const deliveredAttempts = async (healthUrl?: string) =>
      sample(await scrape(healthUrl), 'webhook_attempts_total', { outcome: 'delivered' }) ?? 0;
    const before = await Promise.all(replicas('webhook-dispatcher').map((d) => deliveredAttempts(d.healthUrl)));
    const TOTAL = 100;
    const ids = Array.from({ length: TOTAL }, (_, i) => `once-${i}`);
    expect(await postAll(key, ids)).toBe(TOTAL);
    await a.waitFor((x) => x.json?.tenantId === p.tenantId, TOTAL, 120_000);
    await b.waitFor((x) => x.json?.tenantId === p.tenantId, TOTAL, 120_000);
    // Every successful attempt of either replica is counted: 200 and no more means no delivery was sent twice.
    const attempts = async () => {
      const now = await Promise.all(replicas('webhook-dispatcher').map((d) => deliveredAttempts(d.healthUrl)));
      return now.reduce((s, n, i) => s + n - before[i]!, 0);
    };
    await eventually(async () => (await attempts()) >= 2 * TOTAL, 'every attempt counted');
    expect(await attempts()).toBe(2 * TOTAL);
    for (const r of [a, b]) {
      const got = delivered(r, p.tenantId);
      expect(got.length).toBe(TOTAL);
      expect(new Set(got).size).toBe(TOTAL);
    }
  } finally {
    await a.close();
    await b.close();
  }
}, 300_000);

test('when one of two management replicas and one of two gateways get SIGTERM, then a steady client behind a readiness-checking balancer sees no failed request', async () => {
  const p = aProject();
  const gateways = replicas('gateway').map((g) => g.url!);
  const ready = new Map(gateways.map((g) => [g, true]));
  let stop = false;
  // Resolved after each round of checks: a client that finds no gateway ready waits for the next one, as it would in
  // a balancer's queue. (Trying again at once never yields to the timers, so the checks, and the test, would stall.)
  let roundDone!: () => void;
  let round = new Promise<void>((r) => (roundDone = r));
  // The balancer: routes only to gateways whose /readyz answers 200, checking every 100 ms (its check period).
  const balancer = (async () => {
    while (!stop) {
      for (const g of gateways)
        ready.set(
          g,
          await http('GET', `${g}/readyz`).then(
            (r) => r.status === 200,
            () => false,
          ),
        );
      const done = roundDone;
      round = new Promise<void>((r) => (roundDone = r));
      done();
      await new Promise((r) => setTimeout(r, 100));
    }
    roundDone();
  })();
  const failures: string[] = [];
  let ok = 0;
  let turn = 0;
  const steady = async () => {
    while (!stop) {
      const live = gateways.filter((g) => ready.get(g));
      if (!live.length) {
        await round;
        continue;
      }
      const base = live[turn++ % live.length]!;
      const name = `hook-${turn}`;
      try {
        const ping = await http('GET', `${base}/ping`);
        const created = await http('POST', `${base}${projectPath(p)}/webhook-destinations`, {
          token: stack.adminToken,
          json: { name, url: 'http://127.0.0.1:9/hook', eventTypes: ['event.created'] },
        });
        const read =
          created.status === 201
            ? await http('GET', `${base}${projectPath(p)}/webhook-destinations/${created.body.data.id}`, {
                token: stack.adminToken,
              })
            : created;
        for (const r of [ping, created, read])
          if (r.status >= 300) failures.push(`${r.status} ${JSON.stringify(r.body)}`);
        if (ping.status === 200 && read.status === 200) ok++;
      } catch (err) {
        failures.push(String(err));
      }
    }
  };
  const clients = [steady(), steady(), steady()];
  await eventually(() => ok >= 10, 'steady traffic');

  const [management] = replicas('management');
  const [, secondGateway] = replicas('gateway');
  const exits = [management!.exited, secondGateway!.exited];
  management!.child.kill('SIGTERM');
  secondGateway!.child.kill('SIGTERM');
  const codes = await Promise.all(exits);
  const afterExit = ok;
  await eventually(() => ok >= afterExit + 10, 'traffic after the replicas left');
  stop = true;
  await Promise.all([...clients, balancer]);

  expect(codes).toEqual([0, 0]);
  expect(failures).toEqual([]);
  // Back to two of each for the next test.
  stack.processes.splice(stack.processes.indexOf(management!), 1);
  stack.processes.splice(stack.processes.indexOf(secondGateway!), 1);
  await stack.startProcess('management');
  await stack.startProcess('gateway');
}, 300_000);

test('when one management replica and one dispatcher replica are SIGKILLed mid-load, then every accepted write is kept and every event is delivered', async () => {
  const p = aProject();
  const { key } = await anApiKey(admin, p, { agentId: 'kill-agent' });
  const receiver = await startReceiver();
  try {
    const destination = await admin.post(`${projectPath(p)}/webhook-destinations`, {
      name: 'r',
      url: receiver.url,
      eventTypes: ['event.created'],
    });
    expect(destination.status).toBe(201);
    const TOTAL = 300;
    const ids = Array.from({ length: TOTAL }, (_, i) => `kill-${i}`);
    let killed: Promise<void> | undefined;
    // Management load at the same time: API keys created one after another; each 201 must survive.
    const createdKeys: string[] = [];
    let loading = true;
    const managementLoad = (async () => {
      for (let i = 0; loading; i++) {
        const res = await admin
          .post(`${projectPath(p)}/api-keys`, { agentId: 'kill-agent', name: `k${i}` })
          .catch(() => undefined);
        if (res?.status === 201) createdKeys.push(res.body.data.apiKey.id as string);
      }
    })();
    const accepted = await postAll(key, ids, 8, (n) => {
      if (n === 100) {
        killed = (async () => {
          await stack.kill(replicas('management')[0]!, 'SIGKILL');
          await stack.kill(replicas('webhook-dispatcher')[0]!, 'SIGKILL');
        })();
      }
    });
    await killed;
    loading = false;
    await managementLoad;
    expect(accepted).toBe(TOTAL);
    expect(replicas('management')).toHaveLength(1);
    expect(replicas('webhook-dispatcher')).toHaveLength(1);

    // Nothing lost: every event delivered (at least once; the killed replica's unfinished work is redone when its
    // lease runs out). Waits for distinct events, not requests: attempts the killed replica sent but never recorded
    // are sent again, so the receiver's request count reaches TOTAL before the last distinct events arrive.
    await eventually(
      () => new Set(delivered(receiver, p.tenantId)).size >= TOTAL,
      'every event delivered',
      120_000,
    ).catch(() => undefined);
    expect(new Set(delivered(receiver, p.tenantId)).size).toBe(TOTAL);
    // A repeat is the same delivery sent again (one webhook-id per event, so a receiver can drop it), never a second one.
    const webhookIds = new Map<string, Set<unknown>>();
    for (const r of receiver.received.filter((x) => x.json?.tenantId === p.tenantId)) {
      const id = r.json.data.event.id as string;
      webhookIds.set(id, (webhookIds.get(id) ?? new Set()).add(r.headers['webhook-id']));
    }
    expect([...webhookIds].filter(([, s]) => s.size !== 1).map(([id]) => id)).toEqual([]);
    // The delivery log agrees: one delivery per event, each delivered (none left pending, failed or cancelled).
    const statuses = async () => {
      const byStatus: Record<string, number> = {};
      for (let page = 1, pages = 1; page <= pages; page++) {
        const res = await admin.get(
          `${projectPath(p)}/webhook-destinations/${destination.body.data.id}/deliveries?limit=100&page=${page}`,
        );
        expect(res.status).toBe(200);
        for (const d of res.body.data as Array<{ status: string }>) byStatus[d.status] = (byStatus[d.status] ?? 0) + 1;
        pages = res.body.pagination.pages as number;
      }
      return byStatus;
    };
    await eventually(
      async () => (await statuses()).delivered === TOTAL,
      'every delivery recorded as delivered',
      60_000,
    ).catch(() => undefined);
    expect(await statuses()).toEqual({ delivered: TOTAL });
    // Every API key whose creation was answered 201 is there.
    const listed = new Set<string>();
    for (let page = 1, pages = 1; page <= pages; page++) {
      const res = await admin.get(`${projectPath(p)}/api-keys?limit=100&page=${page}`);
      expect(res.status).toBe(200);
      for (const k of res.body.data as Array<{ id: string }>) listed.add(k.id);
      pages = res.body.pagination.pages as number;
    }
    expect(createdKeys.length).toBeGreaterThan(0);
    expect(createdKeys.filter((id) => !listed.has(id))).toEqual([]);
  } finally {
    await receiver.close();
  }
}, 300_000);
