import { createHmac } from 'node:crypto';
import {
  aKeyPair,
  anApp,
  anAppKey,
  aProject,
  eventually,
  http,
  projectPath,
  signAppJwt,
  startReceiver,
  type Receiver,
} from '@platform/testkit';
import { admin, stack } from '../support/stack';

const ORIGIN = 'https://app.example.com';
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
});

const anonymousSession = (appId: string, headers: Record<string, string> = { origin: ORIGIN }) =>
  http('POST', `${stack.gatewayUrl}/run/auth/apps/${appId}/anonymous-session`, { headers });

/** Posts a run event with an app credential. */
const postEvent = (
  token: string,
  appId: string | undefined,
  headers: Record<string, string> = { origin: ORIGIN },
  body: Record<string, unknown> = { type: 'page.viewed' },
) =>
  http('POST', `${stack.gatewayUrl}/run/v1/events`, {
    token,
    json: body,
    headers: { ...(appId ? { 'x-app-id': appId } : {}), ...headers },
  });

const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8'));
const b64url = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

describe('anonymous sessions', () => {
  test('when a web_client app allows anonymous access and the Origin is allowed, then it answers 200 with a token the run API accepts as app_credential_web_client', async () => {
    const p = aProject();
    const app = await anApp(admin, p, { defaultAgentId: 'helper' });
    await admin.post(`${projectPath(p)}/webhook-destinations`, {
      name: 'local',
      url: receiver.url,
      eventTypes: ['event.created'],
    });
    const res = await anonymousSession(app.id);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['expiresAt', 'token']);
    expect(Date.parse(res.body.expiresAt)).toBeGreaterThan(Date.now());
    const claims = claimsOf(res.body.token);
    expect(claims).toMatchObject({ app: app.id, tid: p.tenantId, pid: p.projectId, type: 'anonymous' });
    expect(claims.sub).toMatch(/^anon_/);

    const ev = await postEvent(res.body.token, app.id, { origin: ORIGIN }, { id: 'anon-1', type: 'widget.opened' });
    expect(ev.status).toBe(201);
    expect(ev.body.data).toMatchObject({
      tenantId: p.tenantId,
      projectId: p.projectId,
      agentId: 'helper',
      serverMetadata: { authMethod: 'app_credential_web_client' },
    });
    // The app has a default agent, so the run carries agentId and ref: the event is dispatched.
    const [delivery] = await receiver.waitFor(
      (r) => r.json?.data?.event?.id === 'anon-1' && r.json?.tenantId === p.tenantId,
    );
    expect(delivery!.json).toMatchObject({ type: 'event.created', agentId: 'helper' });
  });

  test('when a still-valid anonymous token of the app is sent along, then the new token keeps its subject; a bad one starts a new identity', async () => {
    const p = aProject();
    const app = await anApp(admin, p);
    const first = await anonymousSession(app.id);
    const renewed = await anonymousSession(app.id, { origin: ORIGIN, authorization: `Bearer ${first.body.token}` });
    expect(renewed.status).toBe(200);
    expect(claimsOf(renewed.body.token).sub).toBe(claimsOf(first.body.token).sub);
    const fresh = await anonymousSession(app.id, { origin: ORIGIN, authorization: 'Bearer not-a-token' });
    expect(fresh.status).toBe(200);
    expect(claimsOf(fresh.body.token).sub).not.toBe(claimsOf(first.body.token).sub);
  });

  test('when the app is unknown or disabled, then it answers 404; not a web_client, 400; anonymous not allowed, 401', async () => {
    const p = aProject();
    expect((await anonymousSession('app_doesnotexist')).status).toBe(404);
    const disabled = await anApp(admin, p, { enabled: false });
    const res404 = await anonymousSession(disabled.id);
    expect(res404.status).toBe(404);
    expect(res404.contentType).toMatch(/application\/problem\+json/);
    const api = await anApp(admin, p, { type: 'api' });
    expect((await anonymousSession(api.id)).status).toBe(400);
    const closed = await anApp(admin, p, {
      config: { type: 'web_client', webClient: { allowAnonymous: false, allowedDomains: ['app.example.com'] } },
    });
    expect((await anonymousSession(closed.id)).status).toBe(401);
  });

  test('when the Origin is missing or not in allowedDomains, then it answers 403 "Origin not allowed"; wildcards match the apex and subdomains only', async () => {
    const p = aProject();
    const app = await anApp(admin, p, {
      config: {
        type: 'web_client',
        webClient: { allowAnonymous: true, allowedDomains: ['*.example.org', 'localhost:8443'] },
      },
    });
    for (const origin of ['https://example.org', 'https://a.b.example.org', 'http://localhost:8443']) {
      expect({ origin, status: (await anonymousSession(app.id, { origin })).status }).toEqual({ origin, status: 200 });
    }
    for (const origin of ['https://badexample.org', 'https://example.org.evil.com', 'http://localhost:9000', 'null']) {
      const res = await anonymousSession(app.id, { origin });
      expect({ origin, status: res.status, detail: res.body.detail }).toEqual({
        origin,
        status: 403,
        detail: 'Origin not allowed',
      });
    }
    const none = await anonymousSession(app.id, {});
    expect(none.status).toBe(403);
    expect(none.body.detail).toBe('Origin not allowed');
  });

  test('when an anonymous token is used from another origin, for another app, tampered with, or after the app stops allowing anonymous access, then the run API refuses it', async () => {
    const p = aProject();
    const app = await anApp(admin, p);
    const other = await anApp(admin, p);
    const { token } = (await anonymousSession(app.id)).body;
    expect((await postEvent(token, app.id, { origin: 'https://evil.example.net' })).status).toBe(403);
    expect((await postEvent(token, other.id)).status).toBe(401);
    const [h, , s] = token.split('.');
    const forged = `${h}.${b64url({ ...claimsOf(token), exp: Math.floor(Date.now() / 1000) + 10 * 365 * 86400 })}.${s}`;
    expect((await postEvent(forged, app.id)).status).toBe(401);
    expect((await postEvent(token, undefined)).status).toBe(401);

    expect(
      (await admin.patch(`${projectPath(p)}/apps/${app.id}`, { config: { webClient: { allowAnonymous: false } } }))
        .status,
    ).toBe(200);
    await eventually(
      async () => (await postEvent(token, app.id)).status === 401,
      'the anonymous token to stop working',
    );
    expect((await anonymousSession(app.id)).status).toBe(401);
  });
});

describe('app credentials (client JWTs)', () => {
  test('when a JWT is signed with a registered key of any supported algorithm, then the run API accepts it as app_credential_web_client_authenticated', async () => {
    const p = aProject();
    const app = await anApp(admin, p, { defaultAgentId: 'concierge' });
    for (const algorithm of ['RS256', 'RS384', 'RS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const) {
      const key = await anAppKey(admin, p, app.id, algorithm, `kid-${algorithm}`);
      const jwt = await signAppJwt(key, {}, { audience: 'platform-run', subject: `user-${algorithm}` });
      const res = await postEvent(jwt, app.id);
      expect({ algorithm, status: res.status }).toEqual({ algorithm, status: 201 });
      expect(res.body.data).toMatchObject({
        tenantId: p.tenantId,
        projectId: p.projectId,
        agentId: 'concierge',
        serverMetadata: { authMethod: 'app_credential_web_client_authenticated' },
      });
    }
    await eventually(
      async () => (await admin.get(`${projectPath(p)}/apps/${app.id}`)).body.data.lastUsedAt,
      'lastUsedAt to be recorded',
    );
  });

  test('when the kid is unknown, the algorithm is none or HMAC with the public key, the audience differs, the token expired or lives too long, then it answers 401', async () => {
    const p = aProject();
    const app = await anApp(admin, p);
    const key = await anAppKey(admin, p, app.id, 'RS256', 'main');
    const now = Math.floor(Date.now() / 1000);
    const unknownKid = await signAppJwt({ ...aKeyPair('RS256'), kid: 'other' }, {}, { audience: 'platform-run' });
    const noKid = await signAppJwt(
      { privateKey: key.privateKey, algorithm: 'RS256' },
      {},
      { audience: 'platform-run' },
    );
    const unsigned = `${b64url({ alg: 'none', typ: 'JWT', kid: 'main' })}.${b64url({ sub: 'u', iat: now, exp: now + 600, aud: 'platform-run' })}.`;
    const hmacInput = `${b64url({ alg: 'HS256', typ: 'JWT', kid: 'main' })}.${b64url({ sub: 'u', iat: now, exp: now + 600, aud: 'platform-run' })}`;
    const confused = `${hmacInput}.${createHmac('sha256', key.publicKey).update(hmacInput).digest('base64url')}`;
    const wrongAudience = await signAppJwt(key, {}, { audience: 'someone-else' });
    const noAudience = await signAppJwt(key, {});
    const expired = await signAppJwt(key, { iat: now - 7200, exp: now - 3600 }, { audience: 'platform-run' });
    const tooLong = await signAppJwt(key, { iat: now, exp: now + 2 * 86400 }, { audience: 'platform-run' });
    const otherKeySameKid = await signAppJwt({ ...aKeyPair('RS256'), kid: 'main' }, {}, { audience: 'platform-run' });
    const cases = {
      unknownKid,
      noKid,
      unsigned,
      confused,
      wrongAudience,
      noAudience,
      expired,
      tooLong,
      otherKeySameKid,
    };
    for (const [name, jwt] of Object.entries(cases)) {
      const res = await postEvent(jwt, app.id);
      expect({ name, status: res.status }).toEqual({ name, status: 401 });
    }
    expect((await postEvent(await signAppJwt(key, {}, { audience: 'platform-run' }), app.id)).status).toBe(201);
  });

  test('when a token says it was issued in the future beyond the clock skew, or would live longer than the limit from now, then it answers 401; a small skew is accepted', async () => {
    const p = aProject();
    const app = await anApp(admin, p);
    const key = await anAppKey(admin, p, app.id, 'ES256', 'main');
    const now = Math.floor(Date.now() / 1000);
    // exp - iat is within the 1-day limit, but the token is valid for about a year from now.
    const fromTheFuture = await signAppJwt(
      key,
      { iat: now + 365 * 86400, exp: now + 365 * 86400 + 600 },
      { audience: 'platform-run' },
    );
    const tooLongFromNow = await signAppJwt(
      key,
      { iat: now + 3000, exp: now + 3000 + 86400 },
      { audience: 'platform-run' },
    );
    for (const [name, jwt] of Object.entries({ fromTheFuture, tooLongFromNow })) {
      const res = await postEvent(jwt, app.id);
      expect({ name, status: res.status, type: res.contentType }).toEqual({
        name,
        status: 401,
        type: expect.stringMatching(/json/),
      });
    }
    const slightlyAhead = await signAppJwt(key, { iat: now + 20, exp: now + 620 }, { audience: 'platform-run' });
    expect((await postEvent(slightlyAhead, app.id)).status).toBe(201);
  });

  test('when the Origin is not allowed, then a valid JWT answers 403, unless the token says internal: true', async () => {
    const p = aProject();
    const app = await anApp(admin, p);
    const key = await anAppKey(admin, p, app.id, 'ES256');
    const jwt = await signAppJwt(key, {}, { audience: 'platform-run' });
    const res = await postEvent(jwt, app.id, { origin: 'https://elsewhere.example.net' });
    expect(res.status).toBe(403);
    expect(res.body.detail).toBe('Origin not allowed');
    expect((await postEvent(jwt, app.id, {})).status).toBe(403);
    const internal = await signAppJwt(key, { internal: true }, { audience: 'platform-run' });
    expect((await postEvent(internal, app.id, {})).status).toBe(201);
  });

  test('when a key is removed, then tokens signed with it stop working while a newly added key works (rotation)', async () => {
    const p = aProject();
    const app = await anApp(admin, p);
    const oldKey = await anAppKey(admin, p, app.id, 'EdDSA', 'k1');
    const oldJwt = await signAppJwt(oldKey, {}, { audience: 'platform-run' });
    expect((await postEvent(oldJwt, app.id)).status).toBe(201);
    const newKey = await anAppKey(admin, p, app.id, 'ES384', 'k2');
    expect((await admin.delete(`${projectPath(p)}/apps/${app.id}/auth/keys/k1`)).status).toBe(204);
    await eventually(async () => (await postEvent(oldJwt, app.id)).status === 401, 'the removed key to stop working');
    expect((await postEvent(await signAppJwt(newKey, {}, { audience: 'platform-run' }), app.id)).status).toBe(201);
  });

  test('when the app is disabled or deleted, or x-app-id is missing, then its JWTs answer 401', async () => {
    const p = aProject();
    const app = await anApp(admin, p);
    const key = await anAppKey(admin, p, app.id, 'ES256');
    const jwt = await signAppJwt(key, {}, { audience: 'platform-run' });
    expect((await postEvent(jwt, undefined)).status).toBe(401);
    expect((await admin.patch(`${projectPath(p)}/apps/${app.id}`, { enabled: false })).status).toBe(200);
    await eventually(async () => (await postEvent(jwt, app.id)).status === 401, 'the disabled app to be refused');
    expect((await admin.patch(`${projectPath(p)}/apps/${app.id}`, { enabled: true })).status).toBe(200);
    await eventually(async () => (await postEvent(jwt, app.id)).status === 201, 'the re-enabled app to be accepted');
    expect((await admin.delete(`${projectPath(p)}/apps/${app.id}`)).status).toBe(204);
    await eventually(async () => (await postEvent(jwt, app.id)).status === 401, 'the deleted app to be refused');
  });

  test('when a support_copilot app backend sends its OAuth bearer JWT, then it is accepted without an Origin and recorded as app_credential_support_copilot', async () => {
    const p = aProject();
    const app = await anApp(admin, p, {
      type: 'support_copilot',
      config: { type: 'support_copilot', supportCopilot: { audience: 'copilot' } },
      defaultAgentId: null,
    });
    const key = await anAppKey(admin, p, app.id, 'RS512');
    const res = await postEvent(await signAppJwt(key, {}, { audience: 'copilot' }), app.id, {});
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      tenantId: p.tenantId,
      projectId: p.projectId,
      agentId: null,
      serverMetadata: { authMethod: 'app_credential_support_copilot' },
    });
    expect((await postEvent(await signAppJwt(key, {}, { audience: 'platform-run' }), app.id, {})).status).toBe(401);
  });

  test('when an app of type api is named in x-app-id, then client JWTs are refused with 401', async () => {
    const p = aProject();
    const app = await anApp(admin, p, { type: 'api' });
    const key = await anAppKey(admin, p, app.id, 'ES256');
    expect((await postEvent(await signAppJwt(key), app.id, {})).status).toBe(401);
  });
});
