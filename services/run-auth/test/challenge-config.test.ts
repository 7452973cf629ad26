import { ServiceBus } from '@platform/bus';
import { getChallenge, getLegacyPowChallenge, postChallenge, verifyChallenge } from '@platform/contracts';
import { bootService, type StartedService } from '@platform/runtime';
import { AppError } from '@platform/problems';
import { randomId, randomSecret } from '@platform/secrets';
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  connectAs,
  gatewayBusKey,
  natsEnv,
  freePort,
  startNatsServer,
  testStack,
  type NatsServer,
} from '@platform/testkit';
import { runAuth } from '../src/service';

/** run-auth booted in-process on its own NATS with the challenge service and the legacy PoW switched off. */
let nats: NatsServer;
let svc: StartedService;
let nc: Awaited<ReturnType<typeof connectAs>>;
let bus: ServiceBus;

beforeAll(async () => {
  nats = await startNatsServer();
  const main = testStack();
  svc = await bootService(runAuth, {
    ...natsEnv(nats.url, 'run-auth'),
    REDIS_URL: main.env.REDIS_URL,
    REDIS_KEY_PREFIX: `test:rac-${randomId(8)}:`,
    SIGNING_KEY_SEED: randomSecret(32),
    CHALLENGE_ENABLED: 'false',
    LEGACY_POW_ENABLED: 'false',
    LOG_LEVEL: 'warn',
  });
  nc = await connectAs(nats.url, 'admin', { name: 'test-client' });
  bus = new ServiceBus(nc, 'test-client', 5000, { key: gatewayBusKey() });
});
afterAll(async () => {
  await nc?.close();
  await svc?.stop();
  await nats?.destroy();
});

async function problemOf(p: Promise<unknown>): Promise<{ status: number; detail: string }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AppError) return { status: err.status, detail: err.message };
    throw err;
  }
  throw new Error('expected a problem reply');
}

describe('run-auth with the challenge service switched off', () => {
  test('when the challenge service is disabled, then every challenge operation answers 404 "Challenge service is not enabled or app not found"', async () => {
    const expected = { status: 404, detail: 'Challenge service is not enabled or app not found' };
    await expect(problemOf(bus.call(getChallenge, { query: { appId: 'app_x' } }))).resolves.toEqual(expected);
    await expect(problemOf(bus.call(postChallenge, { query: { appId: 'app_x' }, body: {} }))).resolves.toEqual(
      expected,
    );
    await expect(
      problemOf(bus.call(verifyChallenge, { query: { appId: 'app_x' }, body: { payload: 'x' } })),
    ).resolves.toEqual(expected);
  });

  test('when the legacy proof of work is disabled, then it answers 404 "Legacy PoW is not enabled"', async () => {
    await expect(problemOf(bus.call(getLegacyPowChallenge, {}))).resolves.toEqual({
      status: 404,
      detail: 'Legacy PoW is not enabled',
    });
  });
});

describe('run-auth when Redis goes away', () => {
  let redis: ChildProcess;
  let svc2: StartedService;

  beforeAll(async () => {
    const port = await freePort();
    redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    });
    for (let i = 0; i < 100; i++) {
      try {
        svc2 = await bootService(runAuth, {
          ...natsEnv(nats.url, 'run-auth'),
          REDIS_URL: `redis://127.0.0.1:${port}`,
          REDIS_KEY_PREFIX: 'test:',
          SIGNING_KEY_SEED: randomSecret(32),
          LOG_LEVEL: 'silent',
        });
        break;
      } catch {
        await new Promise((r) => setTimeout(r, 100)); // redis-server still starting
      }
    }
    await svc.stop(); // only the run-auth with the challenge service on answers from here
    await new Promise<void>((r) => {
      redis.once('exit', () => r());
      redis.kill('SIGKILL');
    });
  });
  afterAll(async () => {
    await svc2?.stop();
    if (redis.exitCode === null) redis.kill('SIGKILL');
  });

  test('when the challenge store is unreachable, then issuing and verifying challenges fail closed with 503', async () => {
    const unavailable = expect.objectContaining({ status: 503 });
    await expect(problemOf(bus.call(getChallenge, { query: { appId: 'app_x' } }))).resolves.toEqual(unavailable);
    await expect(
      problemOf(bus.call(verifyChallenge, { query: { appId: 'app_x' }, body: { payload: 'x' } })),
    ).resolves.toEqual(unavailable);
    await expect(problemOf(bus.call(getLegacyPowChallenge, {}))).resolves.toEqual(unavailable);
  });
});

describe('a service whose health port another process holds', () => {
  test('when HEALTH_PORT is taken, then the boot fails with a message that names the setting and the port', async () => {
    const holder = http.createServer();
    await new Promise<void>((r) => holder.listen(0, '0.0.0.0', r));
    const port = (holder.address() as AddressInfo).port;
    try {
      const boot = bootService(runAuth, {
        ...natsEnv(nats.url, 'run-auth'),
        REDIS_URL: testStack().env.REDIS_URL,
        REDIS_KEY_PREFIX: `test:rac-${randomId(8)}:`,
        SIGNING_KEY_SEED: randomSecret(32),
        HEALTH_PORT: String(port),
        LOG_LEVEL: 'silent',
      });
      await expect(boot).rejects.toThrow(
        `HEALTH_PORT ${port} (0.0.0.0) is already in use by another process; set HEALTH_PORT to a free port, or 0 for any`,
      );
    } finally {
      await new Promise((r) => holder.close(r));
    }
  });
});
