import { ServiceBus } from '@platform/bus';
import {
  getCredentialGatewayJwks,
  getPlatformCatalog,
  rotateCredentialGatewayKey,
  type JwkSet,
} from '@platform/contracts';
import { bootService, type StartedService } from '@platform/runtime';
import { randomSecret } from '@platform/secrets';
import { connectAs, gatewayBusKey, natsEnv, startNatsServer, testStack, type NatsServer } from '@platform/testkit';
import { credentialGateway } from '../src/service';

/**
 * Two credential gateways booted in-process, each on its own NATS, sharing the test database but with different
 * ENCRYPTION_KEYs (so different key rings); no catalog file (the built-in catalog); EdDSA keys.
 */
interface Instance {
  nats: NatsServer;
  svc: StartedService;
  bus: ServiceBus;
  close(): Promise<void>;
}

async function boot(): Promise<Instance> {
  const nats = await startNatsServer();
  const main = testStack();
  const svc = await bootService(credentialGateway, {
    ...natsEnv(nats.url, 'credential-gateway'),
    MONGO_URL: main.env.MONGO_URL,
    MONGO_DB_PREFIX: main.env.MONGO_DB_PREFIX,
    ENCRYPTION_KEY: randomSecret(32),
    CREDENTIAL_GATEWAY_SIGNING_ALG: 'EdDSA',
    LOG_LEVEL: 'warn',
  });
  const nc = await connectAs(nats.url, 'admin', { name: 'test-client' });
  const bus = new ServiceBus(nc, 'test-client', 10_000, { key: gatewayBusKey() });
  return {
    nats,
    svc,
    bus,
    async close() {
      await nc.close();
      await svc.stop();
      await nats.destroy();
    },
  };
}

let a: Instance;
let b: Instance;
beforeAll(async () => {
  a = await boot();
  b = await boot();
});
afterAll(async () => {
  await a?.close();
  await b?.close();
});

const kidsOf = async (i: Instance) =>
  ((await i.bus.call(getCredentialGatewayJwks, {})).body as JwkSet).keys.map((k) => k.kid);

describe('credential gateway configuration', () => {
  test('when no catalog file is configured, then the built-in catalog is served', async () => {
    const res = await a.bus.call(getPlatformCatalog, {});
    expect(res.status).toBe(200);
    expect((res.body as { platforms: Array<{ slug: string }> }).platforms.map((p) => p.slug)).toEqual([
      'zendesk',
      'salesforce',
      'hubspot',
      'jira',
      'github',
    ]);
  });

  test('when the signing algorithm is EdDSA, then the key set publishes an Ed25519 key', async () => {
    const keys = ((await a.bus.call(getCredentialGatewayJwks, {})).body as JwkSet).keys;
    expect(keys[0]).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' });
  });

  test("when two deployments share a database with different ENCRYPTION_KEYs, then neither publishes or rotates the other's keys", async () => {
    const before = await kidsOf(b);
    const rotated = await a.bus.call(rotateCredentialGatewayKey, {});
    expect(rotated.status).toBe(201);
    const aKids = await kidsOf(a);
    expect(aKids[0]).toBe((rotated.body as { data: { kid: string } }).data.kid);
    expect(await kidsOf(b)).toEqual(before);
    expect(before.some((k) => aKids.includes(k))).toBe(false);
  });
});
