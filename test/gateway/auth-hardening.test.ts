import { randomId } from '@platform/secrets';
import { adminClient, anApiKey, anApp, aProject, aTenantToken, http, projectPath, startGatewayProcess, testStack, type GatewayProcess } from '@platform/testkit';

/*
 * JWT algorithm confusion (HMAC with the public key), alg none, expired, wrong audience and unknown kid are proved in
 * test/run/auth.test.ts ("app credentials (client JWTs)"); this file covers what sits around them in the gateway.
 */
const stack = testStack();
const admin = adminClient(stack);
const FAILURES = 5;
let gw: GatewayProcess;

beforeAll(async () => {
  gw = await startGatewayProcess(
    stack.env,
    { ANALYTICS_PORT: '0', AUTH_FAILURE_LIMIT_PER_IP: String(FAILURES), AUTH_FAILURE_WINDOW_SECONDS: '600', RATE_LIMIT_KEY_PREFIX: `authfail-${randomId(8)}` },
    'gateway-authfail',
  );
});
afterAll(async () => {
  await gw?.stop();
});

/** A client address of its own (the gateway trusts X-Forwarded-For from loopback). */
const anAddress = () => `198.51.100.${Math.floor(Math.random() * 250) + 1}`;

describe('failed authentications from one client', () => {
  test('when one client address fails to authenticate again and again, then it is answered 429 even with a good credential, while other addresses are not affected', async () => {
    const p = aProject();
    const token = await aTenantToken(admin, p.tenantId);
    const ip = anAddress();
    const other = `203.0.113.${Math.floor(Math.random() * 250) + 1}`;
    const url = `${gw.url}${projectPath(p)}/api-keys`;
    const statuses: number[] = [];
    for (let i = 0; i < FAILURES + 2; i++) {
      statuses.push((await http('GET', url, { token: `mt_wrong${i}_guess`, headers: { 'x-forwarded-for': ip } })).status);
    }
    expect(statuses.slice(0, FAILURES)).toEqual(Array(FAILURES).fill(401));
    expect(statuses.slice(FAILURES)).toEqual([429, 429]);
    const blocked = await http('GET', url, { token, headers: { 'x-forwarded-for': ip } });
    expect(blocked.status).toBe(429);
    expect(blocked.contentType).toMatch(/application\/problem\+json/);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await http('GET', url, { token, headers: { 'x-forwarded-for': other } })).status).toBe(200);
    // Public operations stay open to the blocked address.
    expect((await http('GET', `${gw.url}/ping`, { headers: { 'x-forwarded-for': ip } })).status).toBe(200);
  });

  test('when run API keys are guessed from one address, then the guesses are cut off with 429 too', async () => {
    const ip = anAddress();
    const statuses: number[] = [];
    for (let i = 0; i < FAILURES + 1; i++) {
      statuses.push((await http('POST', `${gw.url}/run/v1/events`, { token: `sk_guess${i}.nope`, json: { type: 'x' }, headers: { 'x-forwarded-for': ip } })).status);
    }
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.slice(0, FAILURES).every((s) => s === 401)).toBe(true);
  });
});

describe('malformed credentials', () => {
  test('when the session cookie holds a malformed %-escape, then the answer is 401 problem+json, not a server error', async () => {
    const cookieName = `${stack.env.SESSION_COOKIE_PREFIX ?? 'platform'}.session_token`;
    const res = await http('GET', `${stack.gatewayUrl}/manage/tenants/t-1/projects/p-1/api-keys`, { cookie: `${cookieName}=%E0%A4%A` });
    expect(res.status).toBe(401);
    expect(res.contentType).toMatch(/application\/problem\+json/);
    const withBearer = await http('GET', `${stack.gatewayUrl}/manage/tenants/t-1/projects/p-1/api-keys`, { token: stack.adminToken, cookie: `${cookieName}=%zz` });
    expect(withBearer.status).toBe(200);
  });
});

describe('CORS of the browser-facing run endpoints', () => {
  const ORIGIN = 'https://app.example.com';

  test("when a browser on an allowed domain opens an anonymous session and posts an event, then both answers grant its Origin; a server-side API key's answer grants none", async () => {
    const p = aProject();
    const app = await anApp(admin, p);
    const preflight = await http('OPTIONS', `${stack.gatewayUrl}/run/v1/events`, { headers: { origin: ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, x-app-id' } });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-headers')).toContain('x-app-id');

    const session = await http('POST', `${stack.gatewayUrl}/run/auth/apps/${app.id}/anonymous-session`, { headers: { origin: ORIGIN } });
    expect(session.status).toBe(200);
    expect(session.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    const ev = await http('POST', `${stack.gatewayUrl}/run/v1/events`, { token: session.body.token, json: { type: 'widget.opened' }, headers: { origin: ORIGIN, 'x-app-id': app.id } });
    expect(ev.status).toBe(201);
    expect(ev.headers.get('access-control-allow-origin')).toBe(ORIGIN);

    const { key } = await anApiKey(admin, p);
    const server = await http('POST', `${stack.gatewayUrl}/run/v1/events`, { token: key, json: { type: 'server.side' }, headers: { origin: ORIGIN } });
    expect(server.status).toBe(201);
    expect(server.headers.get('access-control-allow-origin')).toBeNull();
  });

  test('when a page on a domain the app does not allow asks, then the answer is 403 and grants no Origin', async () => {
    const p = aProject();
    const app = await anApp(admin, p);
    const evil = 'https://evil.example.net';
    const session = await http('POST', `${stack.gatewayUrl}/run/auth/apps/${app.id}/anonymous-session`, { headers: { origin: evil } });
    expect(session.status).toBe(403);
    expect(session.headers.get('access-control-allow-origin')).toBeNull();
    const good = await http('POST', `${stack.gatewayUrl}/run/auth/apps/${app.id}/anonymous-session`, { headers: { origin: ORIGIN } });
    const ev = await http('POST', `${stack.gatewayUrl}/run/v1/events`, { token: good.body.token, json: { type: 'widget.opened' }, headers: { origin: evil, 'x-app-id': app.id } });
    expect([401, 403]).toContain(ev.status);
    expect(ev.headers.get('access-control-allow-origin')).toBeNull();
  });

  test('when a management operation is called with an Origin, then no CORS grant is given', async () => {
    const res = await http('GET', `${stack.gatewayUrl}/manage/tenants/t/projects/p/api-keys`, { token: stack.adminToken, headers: { origin: 'https://app.example.com' } });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });
});
