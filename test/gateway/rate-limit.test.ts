import { randomId } from '@platform/secrets';
import { anApiKey, aProject, freePort, http, startGatewayProcess, type GatewayProcess } from '@platform/testkit';
import { admin, stack } from '../support/stack';

const PER_CREDENTIAL = 6;
const PER_IP = 8;
let a: GatewayProcess;
let b: GatewayProcess;

/** A second pair of gateways with low limits and their own counter prefix (the main gateway keeps its generous defaults). */
beforeAll(async () => {
  const env = {
    RATE_LIMIT_PER_CREDENTIAL: String(PER_CREDENTIAL),
    RATE_LIMIT_PER_IP: String(PER_IP),
    RATE_LIMIT_WINDOW_SECONDS: '600',
    RATE_LIMIT_KEY_PREFIX: `rl-test-${randomId(8)}`,
  };
  [a, b] = await Promise.all([
    startGatewayProcess(stack.env, env, 'gateway-rl-a'),
    startGatewayProcess(stack.env, env, 'gateway-rl-b'),
  ]);
});
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
});

/** A client address of its own per test (the gateways trust X-Forwarded-For from loopback). */
const anIp = () => `203.0.113.${Math.floor(Math.random() * 250) + 1}`;

describe('gateway rate limits shared through Redis', () => {
  test('when one credential is used through two gateway processes, then together they allow the limit once and then answer 429 with Retry-After', async () => {
    const p = aProject();
    const { key } = await anApiKey(admin, p);
    const ip = anIp();
    const statuses: number[] = [];
    for (let i = 0; i < PER_CREDENTIAL; i++) {
      const gw = i % 2 === 0 ? a : b;
      const res = await http('POST', `${gw.url}/run/v1/events`, {
        token: key,
        json: { type: 'tick' },
        headers: { 'x-forwarded-for': ip },
      });
      statuses.push(res.status);
    }
    expect(statuses).toEqual(Array(PER_CREDENTIAL).fill(201));
    for (const gw of [a, b]) {
      const res = await http('POST', `${gw.url}/run/v1/events`, {
        token: key,
        json: { type: 'tick' },
        headers: { 'x-forwarded-for': ip },
      });
      expect(res.status).toBe(429);
      expect(res.contentType).toMatch(/application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 429, code: 'too_many_requests' });
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    // Another credential from the same address is not affected; the main gateway (generous defaults) still serves this key.
    const other = await anApiKey(admin, p);
    expect(
      (
        await http('POST', `${b.url}/run/v1/events`, {
          token: other.key,
          json: { type: 'tick' },
          headers: { 'x-forwarded-for': anIp() },
        })
      ).status,
    ).toBe(201);
    expect(
      (await http('POST', `${stack.gatewayUrl}/run/v1/events`, { token: key, json: { type: 'tick' } })).status,
    ).toBe(201);
  });

  test('when one client address calls both gateways without a credential, then the per-IP limit is shared and the next call answers 429', async () => {
    const ip = '198.51.100.7';
    const statuses: number[] = [];
    for (let i = 0; i < PER_IP; i++)
      statuses.push((await http('GET', `${(i % 2 ? b : a).url}/ping`, { headers: { 'x-forwarded-for': ip } })).status);
    expect(statuses).toEqual(Array(PER_IP).fill(200));
    const limited = await http('GET', `${a.url}/ping`, { headers: { 'x-forwarded-for': ip } });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toMatch(/^\d+$/);
    expect((await http('GET', `${b.url}/ping`, { headers: { 'x-forwarded-for': '198.51.100.8' } })).status).toBe(200);
  });

  test('when one IPv6 client rotates through the addresses of its /64, then they share one per-address limit while another /64 is not affected', async () => {
    const net = `2001:db8:${Math.floor(Math.random() * 0xffff).toString(16)}:${Math.floor(Math.random() * 0xffff).toString(16)}`;
    const statuses: number[] = [];
    for (let i = 0; i < PER_IP; i++)
      statuses.push(
        (
          await http('GET', `${(i % 2 ? b : a).url}/ping`, {
            headers: { 'x-forwarded-for': `${net}::${(i + 1).toString(16)}` },
          })
        ).status,
      );
    expect(statuses).toEqual(Array(PER_IP).fill(200));
    const limited = await http('GET', `${a.url}/ping`, {
      headers: { 'x-forwarded-for': `${net}:ffff:ffff:ffff:fff0` },
    });
    expect(limited.status).toBe(429);
    expect(limited.contentType).toMatch(/application\/problem\+json/);
    expect(
      (await http('GET', `${b.url}/ping`, { headers: { 'x-forwarded-for': `${net.replace(/:[0-9a-f]+$/, ':1')}::1` } }))
        .status,
    ).toBe(200);
  });

  test('when Redis cannot be reached, then the gateway lets requests through (general limits fail open)', async () => {
    const deadRedis = `redis://127.0.0.1:${await freePort()}`;
    const c = await startGatewayProcess(
      stack.env,
      { REDIS_URL: deadRedis, RATE_LIMIT_PER_IP: '1' },
      'gateway-rl-noredis',
    );
    try {
      for (let i = 0; i < 3; i++) expect((await http('GET', `${c.url}/ping`)).status).toBe(200);
    } finally {
      await c.stop();
    }
  });
});
