import { randomId } from '@platform/secrets';
import {
  anApp,
  eventually,
  http,
  solutionHeader,
  solveChallenge,
  startFakeChallengeProvider,
  startPrivateStack,
  type FakeChallengeProvider,
  type PrivateStack,
} from '@platform/testkit';

/**
 * A second, small stack (its own NATS; management, run-auth, events-ingest and a gateway) configured for a hosted
 * challenge provider (a local fake), a low challenge rate limit, anonymous sessions that require a solved challenge,
 * 3-second anonymous tokens and the legacy PoW endpoint switched off.
 */
const CHALLENGE_LIMIT = 4;
const ORIGIN = 'https://app.example.com';
let provider: FakeChallengeProvider;
let mini: PrivateStack;

beforeAll(async () => {
  provider = await startFakeChallengeProvider();
  mini = await startPrivateStack({
    name: 'challenge-provider',
    services: ['management', 'run-auth', 'events-ingest'],
    serviceEnv: {
      'run-auth': {
        CHALLENGE_UPSTREAM_URL: provider.url,
        CHALLENGE_RATE_LIMIT_POINTS: String(CHALLENGE_LIMIT),
        CHALLENGE_RATE_LIMIT_WINDOW_SECONDS: '600',
        ANONYMOUS_SESSION_CHALLENGE: 'required',
        ANONYMOUS_SESSION_TTL_SECONDS: '3',
        LEGACY_POW_ENABLED: 'false',
      },
    },
  });
}, 120_000);
afterAll(() => Promise.all([mini?.stop(), provider?.close()]));

const anyProject = () => ({ tenantId: `t-${randomId(8).toLowerCase()}`, projectId: `p-${randomId(8).toLowerCase()}` });
const get = (path: string, headers: Record<string, string> = { origin: ORIGIN }) =>
  http('GET', `${mini.gatewayUrl}${path}`, { headers });
const post = (path: string, json: unknown, headers: Record<string, string> = { origin: ORIGIN }) =>
  http('POST', `${mini.gatewayUrl}${path}`, { json, headers });
const newApp = () => anApp(mini.admin, anyProject());

describe('challenge endpoints with a hosted challenge provider', () => {
  test('when a challenge is asked, then the provider is called with the endpoint class and client address, and its answer is passed through', async () => {
    const app = await newApp();
    const res = await get(`/run/auth/challenge?appId=${app.id}&endpointClass=signup`, {
      origin: ORIGIN,
      'user-agent': 'widget-test',
      'x-forwarded-for': '192.0.2.10',
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ algorithm: 'SHA-256', maxnumber: 1000 });
    const call = provider.received.at(-1)!;
    expect(call).toMatchObject({ method: 'GET', path: '/v1/challenge' });
    expect(call.headers).toMatchObject({
      'x-endpoint-class': 'signup',
      'user-agent': 'widget-test',
      'x-forwarded-for': '192.0.2.10',
    });
  });

  test('when the provider fails or answers something that is not JSON, then the endpoints answer 502 "Challenge upstream error"; its 429 becomes our 429', async () => {
    const app = await newApp();
    try {
      provider.fail('error');
      const failed = await get(`/run/auth/challenge?appId=${app.id}`);
      expect(failed.status).toBe(502);
      expect(failed.contentType).toMatch(/application\/problem\+json/);
      expect(failed.body.detail).toBe('Challenge upstream error');
      provider.fail('garbage');
      const garbage = await post(`/run/auth/challenge/verify?appId=${app.id}`, { payload: 'eyJ9' });
      expect(garbage.status).toBe(502);
      expect(garbage.body.detail).toBe('Challenge upstream error');
      provider.fail('rate-limited');
      const limited = await post(`/run/auth/challenge?appId=${app.id}`, { endpointClass: 'chat' });
      expect(limited.status).toBe(429);
      expect(limited.body.detail).toBe('Challenge service rate limit exceeded');
    } finally {
      provider.recover();
    }
  });

  test('when one client asks challenges for one app more often than the limit, then it answers 429 with Retry-After; another client address is not affected', async () => {
    const app = await newApp();
    const from = (ip: string) => ({ origin: ORIGIN, 'x-forwarded-for': ip });
    for (let i = 0; i < CHALLENGE_LIMIT; i++)
      expect((await get(`/run/auth/challenge?appId=${app.id}`, from('192.0.2.20'))).status).toBe(200);
    const res = await get(`/run/auth/challenge?appId=${app.id}`, from('192.0.2.20'));
    expect(res.status).toBe(429);
    expect(res.body.detail).toBe('Challenge service rate limit exceeded');
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await get(`/run/auth/challenge?appId=${app.id}`, from('192.0.2.21'))).status).toBe(200);
  });

  test('when the legacy proof of work is switched off, then it answers 404 "Legacy PoW is not enabled"', async () => {
    const res = await get('/run/auth/pow/challenge', {});
    expect(res.status).toBe(404);
    expect(res.body.detail).toBe('Legacy PoW is not enabled');
  });

  test('when anonymous sessions require a challenge, then no or a rejected solution is refused, and a provider-verified one gives a session', async () => {
    const app = await newApp();
    const url = `/run/auth/apps/${app.id}/anonymous-session`;
    expect((await post(url, undefined)).status).toBe(400);
    expect((await post(url, undefined, { origin: ORIGIN, 'x-challenge-solution': 'not base64 json!' })).status).toBe(
      400,
    );
    expect(
      (
        await post(url, undefined, {
          origin: ORIGIN,
          'x-challenge-solution': solutionHeader({ payload: 'forged.signature' }),
        })
      ).status,
    ).toBe(403);

    const solution = solveChallenge((await get(`/run/auth/challenge?appId=${app.id}`)).body);
    const verified = await post(`/run/auth/challenge/verify?appId=${app.id}`, solution);
    expect(verified.status).toBe(200);
    expect(verified.body).toMatchObject({ verified: true, payload: expect.any(String) });
    const session = await post(url, undefined, {
      origin: ORIGIN,
      'x-challenge-solution': solutionHeader({ payload: verified.body.payload }),
    });
    expect(session.status).toBe(200);
    expect(provider.received.at(-1)).toMatchObject({
      path: '/v1/verify/signature',
      body: { payload: verified.body.payload },
    });
  });

  test('when an anonymous session token outlives its configured lifetime, then the run API refuses it with 401', async () => {
    const app = await newApp();
    const solution = solveChallenge((await get(`/run/auth/challenge?appId=${app.id}`)).body);
    const { payload } = (await post(`/run/auth/challenge/verify?appId=${app.id}`, solution)).body;
    const session = await post(`/run/auth/apps/${app.id}/anonymous-session`, undefined, {
      origin: ORIGIN,
      'x-challenge-solution': solutionHeader({ payload }),
    });
    expect(session.status).toBe(200);
    const use = () =>
      http('POST', `${mini.gatewayUrl}/run/v1/events`, {
        token: session.body.token,
        json: { type: 'ping' },
        headers: { origin: ORIGIN, 'x-app-id': app.id },
      });
    expect((await use()).status).toBe(201);
    await eventually(async () => (await use()).status === 401, 'the anonymous token to expire', 10_000, 250);
    expect((await use()).body.detail).toMatch(/Authentication failed/);
  });
});
