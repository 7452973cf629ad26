import { randomId } from '@platform/secrets';
import {
  anApiKey,
  anApp,
  aProject,
  aTenantToken,
  http,
  projectPath,
  startGatewayProcess,
  type GatewayProcess,
} from '@platform/testkit';
import { admin, stack } from '../support/stack';

/*
 * JWT algorithm confusion (HMAC with the public key), alg none, expired, wrong audience and unknown kid are proved in
 * test/run/auth.test.ts ("app credentials (client JWTs)"); this file covers what sits around them in the gateway.
 */
const FAILURES = 5;
const CREDENTIAL_FAILURES = 3;
// Two gateways sharing the lockout's counters (one Redis prefix), like replicas behind a load balancer.
let gw: GatewayProcess;
let other: GatewayProcess;

beforeAll(async () => {
  const env = {
    ANALYTICS_PORT: '0',
    AUTH_FAILURE_LIMIT_PER_IP: String(FAILURES),
    AUTH_FAILURE_LIMIT_PER_CREDENTIAL: String(CREDENTIAL_FAILURES),
    AUTH_FAILURE_WINDOW_SECONDS: '600',
    RATE_LIMIT_KEY_PREFIX: `authfail-${randomId(8)}`,
  };
  [gw, other] = await Promise.all([
    startGatewayProcess(stack.env, env, 'gateway-authfail'),
    startGatewayProcess(stack.env, env, 'gateway-authfail'),
  ]);
});
afterAll(async () => {
  await Promise.all([gw?.stop(), other?.stop()]);
});

/** A client address of its own for each call (the gateway trusts X-Forwarded-For from loopback). */
const base = `${Math.floor(Math.random() * 200) + 20}`;
let next = 0;
const anAddress = () => `10.${base}.${Math.floor(next / 250)}.${(next++ % 250) + 1}`;
const from = (ip: string) => ({ 'x-forwarded-for': ip });

/** Fails to authenticate from `ip` until the address is over its limit (each guess a different credential). */
async function lockOut(url: string, ip: string): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < FAILURES + 1; i++)
    statuses.push((await http('GET', url, { token: `mt_wrong${i}_${randomId(6)}`, headers: from(ip) })).status);
  return statuses;
}

/**
 * A client that works: a project's tenant token (`good`, and `unused`, one it has not presented yet), behind a fresh
 * client address (`ip`), reading the project's API keys (`path`) through the first gateway with 200.
 */
async function aWorkingClient() {
  const p = aProject();
  const good = await aTenantToken(admin, p.tenantId);
  const unused = await aTenantToken(admin, p.tenantId);
  const ip = anAddress();
  const path = `${projectPath(p)}/api-keys`;
  expect((await http('GET', `${gw.url}${path}`, { token: good, headers: from(ip) })).status).toBe(200);
  return { p, good, unused, ip, path };
}

describe('failed authentications from one client address', () => {
  test('when an address fails to authenticate again and again, then credentials it presents that no gateway verified get 429 without being checked, while a verified one keeps working, on both gateways', async () => {
    // The good client behind the shared address has been working all along (through the first gateway).
    const { good, unused, ip, path } = await aWorkingClient();

    // A misconfigured client behind the same address retries stale keys: 401 up to the limit, then 429.
    expect(await lockOut(`${gw.url}${path}`, ip)).toEqual([...Array(FAILURES).fill(401), 429]);

    // The other gateway agrees: one more guess from the address is refused there too, with Retry-After.
    const guess = await http('GET', `${other.url}${path}`, { token: 'mt_another_guess', headers: from(ip) });
    expect(guess.status).toBe(429);
    expect(guess.contentType).toMatch(/application\/problem\+json/);
    expect(Number(guess.headers.get('retry-after'))).toBeGreaterThan(0);
    // A valid credential never verified before is not checked either: from that address it looks like a guess.
    const notChecked = await http('GET', `${other.url}${path}`, { token: unused, headers: from(ip) });
    expect(notChecked.status).toBe(429);
    expect(Number(notChecked.headers.get('retry-after'))).toBeGreaterThan(0);

    // The good client is not locked out, on either gateway (the second one never verified its credential itself).
    const fine = await http('GET', `${other.url}${path}`, { token: good, headers: from(ip) });
    expect(fine.status).toBe(200);
    expect(fine.body.data).toEqual([]);
    expect((await http('GET', `${gw.url}${path}`, { token: good, headers: from(ip) })).status).toBe(200);

    // Once the unused credential has been verified (from another address), it passes from the noisy address too.
    expect((await http('GET', `${gw.url}${path}`, { token: unused, headers: from(anAddress()) })).status).toBe(200);
    expect((await http('GET', `${other.url}${path}`, { token: unused, headers: from(ip) })).status).toBe(200);

    // Other addresses are not affected; public operations stay open to the noisy one.
    expect(
      (await http('GET', `${other.url}${path}`, { token: 'mt_wrong_elsewhere', headers: from(anAddress()) })).status,
    ).toBe(401);
    expect((await http('GET', `${gw.url}/ping`, { headers: from(ip) })).status).toBe(200);
  });

  test('when run API keys are guessed from one address, then the guesses are cut off with 429, while a working key there goes on and a revoked one stops', async () => {
    const p = aProject();
    const working = await anApiKey(admin, p);
    const revoked = await anApiKey(admin, p);
    const ip = anAddress();
    const post = (url: string, token: string) =>
      http('POST', `${url}/run/v1/events`, { token, json: { type: 'x' }, headers: from(ip) });
    expect((await post(gw.url, working.key)).status).toBe(201);
    expect((await post(other.url, revoked.key)).status).toBe(201);
    const statuses: number[] = [];
    for (let i = 0; i < FAILURES + 1; i++) statuses.push((await post(gw.url, `sk_guess${i}.${randomId(8)}`)).status);
    expect(statuses).toEqual([...Array(FAILURES).fill(401), 429]);

    expect((await post(other.url, working.key)).status).toBe(201);
    expect((await post(gw.url, working.key)).status).toBe(201);
    // A known key that is revoked is checked again (and refused), then is no longer known.
    expect((await admin.delete(`${projectPath(p)}/api-keys/${revoked.apiKey.id}`)).status).toBe(204);
    expect([401, 429]).toContain((await post(other.url, revoked.key)).status);
    expect((await post(gw.url, revoked.key)).status).toBe(429);
    expect(
      (
        await http('POST', `${gw.url}/run/v1/events`, {
          token: revoked.key,
          json: { type: 'x' },
          headers: from(anAddress()),
        })
      ).status,
    ).toBe(401);
  });
});

describe('failed authentications with one credential', () => {
  test('when one client retries a stale key, and sends a good token to operations of another scheme, again and again, then only those are refused: its address stays open to new credentials and the good token keeps working', async () => {
    const { good, unused, ip, path } = await aWorkingClient();
    const stale: number[] = [];
    const wrongScheme: number[] = [];
    for (let i = 0; i < FAILURES * 2; i++) {
      stale.push(
        (
          await http('GET', `${(i % 2 ? other : gw).url}${path}`, {
            token: 'mt_stale_key_of_a_cron_job',
            headers: from(ip),
          })
        ).status,
      );
      // A management token is no run credential (a fuzzer or a confused script sends it everywhere).
      wrongScheme.push(
        (await http('POST', `${gw.url}/run/v1/events`, { token: good, json: { type: 'x' }, headers: from(ip) })).status,
      );
    }
    expect(stale).toEqual([
      ...Array(CREDENTIAL_FAILURES).fill(401),
      ...Array(FAILURES * 2 - CREDENTIAL_FAILURES).fill(429),
    ]);
    expect(wrongScheme).toEqual([
      ...Array(CREDENTIAL_FAILURES).fill(401),
      ...Array(FAILURES * 2 - CREDENTIAL_FAILURES).fill(429),
    ]);
    // Two credentials failed from the address: far from its limit, so a credential never verified is still checked.
    expect((await http('GET', `${other.url}${path}`, { token: unused, headers: from(ip) })).status).toBe(200);
    expect((await http('GET', `${gw.url}${path}`, { token: good, headers: from(ip) })).status).toBe(200);
  });

  test('when one bad credential is retried from many addresses, then it is refused with 429 wherever it comes from, on both gateways, while the addresses stay usable', async () => {
    const p = aProject();
    const good = await aTenantToken(admin, p.tenantId);
    const stale = `mt_stale_${randomId(12)}`;
    const path = `${projectPath(p)}/api-keys`;
    const addresses = Array.from({ length: CREDENTIAL_FAILURES + 2 }, anAddress);
    const statuses: number[] = [];
    for (const [i, ip] of addresses.entries())
      statuses.push(
        (await http('GET', `${(i % 2 ? other : gw).url}${path}`, { token: stale, headers: from(ip) })).status,
      );
    expect(statuses).toEqual([...Array(CREDENTIAL_FAILURES).fill(401), 429, 429]);
    const refused = await http('GET', `${other.url}${path}`, { token: stale, headers: from(anAddress()) });
    expect(refused.status).toBe(429);
    expect(refused.contentType).toMatch(/application\/problem\+json/);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // One failure per address is far below the address limit: a new credential from any of them is still checked.
    expect((await http('GET', `${gw.url}${path}`, { token: good, headers: from(addresses[0]!) })).status).toBe(200);
    expect(
      (await http('GET', `${gw.url}${path}`, { token: 'mt_other_wrong', headers: from(addresses[1]!) })).status,
    ).toBe(401);
  });
});

describe('malformed credentials', () => {
  test('when the session cookie holds a malformed %-escape, then the answer is 401 problem+json, not a server error', async () => {
    const cookieName = `${stack.env.SESSION_COOKIE_PREFIX ?? 'platform'}.session_token`;
    const res = await http('GET', `${stack.gatewayUrl}/manage/tenants/t-1/projects/p-1/api-keys`, {
      cookie: `${cookieName}=%E0%A4%A`,
    });
    expect(res.status).toBe(401);
    expect(res.contentType).toMatch(/application\/problem\+json/);
    const withBearer = await http('GET', `${stack.gatewayUrl}/manage/tenants/t-1/projects/p-1/api-keys`, {
      token: stack.adminToken,
      cookie: `${cookieName}=%zz`,
    });
    expect(withBearer.status).toBe(200);
  });
});

describe('CORS of the browser-facing run endpoints', () => {
  const ORIGIN = 'https://app.example.com';

  test("when a browser on an allowed domain opens an anonymous session and posts an event, then both answers grant its Origin; a server-side API key's answer grants none", async () => {
    const p = aProject();
    const app = await anApp(admin, p);
    const preflight = await http('OPTIONS', `${stack.gatewayUrl}/run/v1/events`, {
      headers: {
        origin: ORIGIN,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type, x-app-id',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-headers')).toContain('x-app-id');

    const session = await http('POST', `${stack.gatewayUrl}/run/auth/apps/${app.id}/anonymous-session`, {
      headers: { origin: ORIGIN },
    });
    expect(session.status).toBe(200);
    expect(session.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    const ev = await http('POST', `${stack.gatewayUrl}/run/v1/events`, {
      token: session.body.token,
      json: { type: 'widget.opened' },
      headers: { origin: ORIGIN, 'x-app-id': app.id },
    });
    expect(ev.status).toBe(201);
    expect(ev.headers.get('access-control-allow-origin')).toBe(ORIGIN);

    const { key } = await anApiKey(admin, p);
    const server = await http('POST', `${stack.gatewayUrl}/run/v1/events`, {
      token: key,
      json: { type: 'server.side' },
      headers: { origin: ORIGIN },
    });
    expect(server.status).toBe(201);
    expect(server.headers.get('access-control-allow-origin')).toBeNull();
  });

  test('when a page on a domain the app does not allow asks, then the answer is 403 and grants no Origin', async () => {
    const p = aProject();
    const app = await anApp(admin, p);
    const evil = 'https://evil.example.net';
    const session = await http('POST', `${stack.gatewayUrl}/run/auth/apps/${app.id}/anonymous-session`, {
      headers: { origin: evil },
    });
    expect(session.status).toBe(403);
    expect(session.headers.get('access-control-allow-origin')).toBeNull();
    const good = await http('POST', `${stack.gatewayUrl}/run/auth/apps/${app.id}/anonymous-session`, {
      headers: { origin: ORIGIN },
    });
    const ev = await http('POST', `${stack.gatewayUrl}/run/v1/events`, {
      token: good.body.token,
      json: { type: 'widget.opened' },
      headers: { origin: evil, 'x-app-id': app.id },
    });
    expect([401, 403]).toContain(ev.status);
    expect(ev.headers.get('access-control-allow-origin')).toBeNull();
  });

  test('when a management operation is called with an Origin, then no CORS grant is given', async () => {
    const res = await http('GET', `${stack.gatewayUrl}/manage/tenants/t/projects/p/api-keys`, {
      token: stack.adminToken,
      headers: { origin: 'https://app.example.com' },
    });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });
});
