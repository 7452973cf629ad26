import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import {
  anApiKey,
  anApp,
  anAppKey,
  aProject,
  aTenantToken,
  client,
  http,
  projectPath,
  signAppJwt,
  type HttpResult,
} from '@platform/testkit';
import { admin, stack } from '../support/stack';

const ORIGIN = 'https://app.example.com';
const GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
const ISSUER = 'urn:platform:credential-gateway';
const JWKS_URL = `${stack.gatewayUrl}/credential-gateway/.well-known/jwks.json`;

/** POSTs a form body to the token endpoint. */
const postToken = (params: Record<string, string>, headers: Record<string, string> = {}) =>
  http('POST', `${stack.gatewayUrl}/credential-gateway/token`, {
    raw: new URLSearchParams(params).toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
  });

/** A complete, valid exchange request for a subject token of an app (overrides replace or, with undefined, drop fields). */
const exchange = (subjectToken: string, appId: string, overrides: Record<string, string | undefined> = {}) => {
  const params: Record<string, string | undefined> = {
    grant_type: GRANT,
    subject_token: subjectToken,
    subject_token_type: ACCESS_TOKEN,
    audience: 'helpdesk',
    svc_app_id: appId,
    ...overrides,
  };
  return postToken(
    Object.fromEntries(Object.entries(params).filter(([, v]) => v !== undefined)) as Record<string, string>,
  );
};

const anonymousToken = async (appId: string): Promise<string> => {
  const res = await http('POST', `${stack.gatewayUrl}/run/auth/apps/${appId}/anonymous-session`, {
    headers: { origin: ORIGIN },
  });
  if (res.status !== 200) throw new Error(`anonymous session failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.token as string;
};

const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8'));

/** Verifies an issued token the way a platform would: against the key set fetched over HTTP. */
const verifyWithJwks = (token: string, audience: string) =>
  jwtVerify(token, createRemoteJWKSet(new URL(JWKS_URL)), {
    issuer: ISSUER,
    audience,
    typ: 'at+jwt',
    algorithms: ['ES256', 'EdDSA'],
  });

/** Asserts an RFC 6749 error answer: status, `{error, error_description}` only, JSON, no-store. */
function expectOAuthError(res: HttpResult, status: number, error: string) {
  expect({ status: res.status, error: res.body?.error }).toEqual({ status, error });
  expect(Object.keys(res.body).sort()).toEqual(['error', 'error_description']);
  expect(typeof res.body.error_description).toBe('string');
  expect(res.contentType).toMatch(/^application\/json/);
  expect(res.headers.get('cache-control')).toBe('no-store');
}

describe('platform catalog', () => {
  test('when the catalog is fetched, then it lists the configured platforms in the spec shape with an ETag and Cache-Control, without the access rules', async () => {
    const res = await http('GET', `${stack.gatewayUrl}/credential-gateway/.well-known/platforms`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      platforms: [
        {
          credentialRequired: true,
          label: 'Helpdesk',
          slug: 'helpdesk',
          pageMatchers: [{ hostGlob: '*.helpdesk.example', pageType: 'ticket', pathPattern: '/tickets/*' }],
        },
        {
          credentialRequired: true,
          label: 'CRM (support copilot apps only)',
          slug: 'crm',
          pageMatchers: [{ hostGlob: 'crm.example', pageType: 'contact', pathPattern: '/contacts/*' }],
        },
        { credentialRequired: false, label: 'Wiki', slug: 'wiki', pageMatchers: [] },
      ],
    });
    expect(res.headers.get('etag')).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect(res.headers.get('cache-control')).toBe('public, max-age=3600');
  });

  test('when If-None-Match carries the current ETag, then it answers 304 with no body; a stale ETag gets the catalog', async () => {
    const first = await http('GET', `${stack.gatewayUrl}/credential-gateway/.well-known/platforms`);
    const etag = first.headers.get('etag')!;
    const again = await http('GET', `${stack.gatewayUrl}/credential-gateway/.well-known/platforms`, {
      headers: { 'if-none-match': `W/"other", ${etag}` },
    });
    expect(again.status).toBe(304);
    expect(again.body).toBeUndefined();
    expect(again.headers.get('etag')).toBe(etag);
    const stale = await http('GET', `${stack.gatewayUrl}/credential-gateway/.well-known/platforms`, {
      headers: { 'if-none-match': '"stale"' },
    });
    expect(stale.status).toBe(200);
    expect(stale.body).toEqual(first.body);
  });
});

describe('token exchange', () => {
  test('when an anonymous session token is exchanged for a catalog platform, then a Bearer token for that platform verifies against the published key set with the right audience and expiry', async () => {
    const p = aProject();
    const app = await anApp(admin, p);
    const subjectToken = await anonymousToken(app.id);
    const res = await exchange(subjectToken, app.id);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(Object.keys(res.body).sort()).toEqual(['access_token', 'expires_in', 'issued_token_type', 'token_type']);
    expect(res.body).toMatchObject({ expires_in: 300, issued_token_type: ACCESS_TOKEN, token_type: 'Bearer' });

    const { payload, protectedHeader } = await verifyWithJwks(res.body.access_token, 'helpdesk');
    expect(protectedHeader).toMatchObject({ alg: 'ES256', typ: 'at+jwt' });
    expect(protectedHeader.kid).toEqual(expect.any(String));
    expect(payload).toMatchObject({
      iss: ISSUER,
      aud: 'helpdesk',
      sub: claimsOf(subjectToken).sub,
      client_id: app.id,
      tid: p.tenantId,
      pid: p.projectId,
      auth_method: 'app_credential_web_client',
    });
    expect(payload.exp! - payload.iat!).toBe(300);
    expect(Math.abs(payload.iat! - Date.now() / 1000)).toBeLessThan(120);
    await expect(verifyWithJwks(res.body.access_token, 'crm')).rejects.toThrow(/aud/);
  });

  test("when an app JWT signed with one of the app's keys is exchanged, then the token carries its subject and never outlives it", async () => {
    const p = aProject();
    const app = await anApp(admin, p, { type: 'support_copilot', config: { type: 'support_copilot' } });
    const key = await anAppKey(admin, p, app.id, 'ES256');
    const jwt = await signAppJwt(key, {}, { subject: 'agent-7', expiresIn: '100s' });
    const res = await exchange(jwt, app.id, { audience: 'crm' });
    expect(res.status).toBe(200);
    expect(res.body.expires_in).toBeGreaterThan(0);
    expect(res.body.expires_in).toBeLessThanOrEqual(100);
    const { payload } = await verifyWithJwks(res.body.access_token, 'crm');
    expect(payload).toMatchObject({ sub: 'agent-7', client_id: app.id, auth_method: 'app_credential_support_copilot' });
    expect(payload.exp).toBe(claimsOf(jwt).exp);
  });

  test("when an API key of the app's project is exchanged by an api app, then it gets a token whose subject names the key", async () => {
    const p = aProject();
    const app = await anApp(admin, p, { type: 'api', config: { type: 'api' } });
    const { key, apiKey } = await anApiKey(admin, p);
    const res = await exchange(key, app.id, { audience: 'wiki' });
    expect(res.status).toBe(200);
    const { payload } = await verifyWithJwks(res.body.access_token, 'wiki');
    expect(payload).toMatchObject({
      sub: `api_key:${apiKey.id}`,
      client_id: app.id,
      tid: p.tenantId,
      pid: p.projectId,
      auth_method: 'api_key',
    });
  });

  test('when resource is a URL on a host of the platform, then the token names it; on any other host it is invalid_target', async () => {
    const p = aProject();
    const app = await anApp(admin, p);
    const subjectToken = await anonymousToken(app.id);
    const ok = await exchange(subjectToken, app.id, { resource: 'https://acme.helpdesk.example/tickets/42' });
    expect(ok.status).toBe(200);
    expect((await verifyWithJwks(ok.body.access_token, 'helpdesk')).payload.resource).toBe(
      'https://acme.helpdesk.example/tickets/42',
    );
    for (const resource of [
      'https://evil.example/tickets/42',
      'https://helpdesk.example.evil.test/',
      'not a url',
      'ftp://acme.helpdesk.example/x',
    ]) {
      expectOAuthError(await exchange(subjectToken, app.id, { resource }), 400, 'invalid_target');
    }
  });
});

describe('token exchange errors', () => {
  let appId: string;
  let subjectToken: string;
  let project: { tenantId: string; projectId: string };
  beforeAll(async () => {
    project = aProject();
    appId = (await anApp(admin, project)).id;
    subjectToken = await anonymousToken(appId);
  });

  test('when a required parameter is missing or empty, then it answers 400 invalid_request', async () => {
    for (const field of ['grant_type', 'subject_token', 'subject_token_type', 'audience', 'svc_app_id']) {
      expectOAuthError(await exchange(subjectToken, appId, { [field]: undefined }), 400, 'invalid_request');
    }
    expectOAuthError(await exchange(subjectToken, appId, { audience: '' }), 400, 'invalid_request');
    expectOAuthError(await postToken({}), 400, 'invalid_request');
  });

  test('when subject_token_type is not the access token type, then it answers 400 invalid_request', async () => {
    expectOAuthError(
      await exchange(subjectToken, appId, { subject_token_type: 'urn:ietf:params:oauth:token-type:jwt' }),
      400,
      'invalid_request',
    );
  });

  test('when the body is JSON instead of a form, then it answers 400 invalid_request', async () => {
    const res = await http('POST', `${stack.gatewayUrl}/credential-gateway/token`, {
      json: {
        grant_type: GRANT,
        subject_token: subjectToken,
        subject_token_type: ACCESS_TOKEN,
        audience: 'helpdesk',
        svc_app_id: appId,
      },
    });
    expectOAuthError(res, 400, 'invalid_request');
  });

  test('when a parameter is sent twice, then it answers 400 invalid_request', async () => {
    const body = `${new URLSearchParams({ grant_type: GRANT, subject_token: subjectToken, subject_token_type: ACCESS_TOKEN, audience: 'helpdesk', svc_app_id: appId })}&audience=wiki`;
    const res = await http('POST', `${stack.gatewayUrl}/credential-gateway/token`, {
      raw: body,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expectOAuthError(res, 400, 'invalid_request');
  });

  test('when grant_type is another grant, then it answers 400 unsupported_grant_type', async () => {
    expectOAuthError(
      await exchange(subjectToken, appId, { grant_type: 'client_credentials' }),
      400,
      'unsupported_grant_type',
    );
  });

  test('when the subject token is not a credential this platform issued, then it answers 400 invalid_grant', async () => {
    expectOAuthError(await exchange('not-a-token', appId), 400, 'invalid_grant');
    const forged = `${subjectToken.slice(0, subjectToken.lastIndexOf('.'))}.${Buffer.from('forged').toString('base64url')}`;
    expectOAuthError(await exchange(forged, appId), 400, 'invalid_grant');
  });

  test('when the app JWT has expired, then it answers 400 invalid_grant', async () => {
    const p = aProject();
    const app = await anApp(admin, p, { type: 'support_copilot', config: { type: 'support_copilot' } });
    const key = await anAppKey(admin, p, app.id, 'ES256');
    const now = Math.floor(Date.now() / 1000);
    const expired = await signAppJwt(key, { iat: now - 900, exp: now - 600 });
    const res = await exchange(expired, app.id, { audience: 'crm' });
    expectOAuthError(res, 400, 'invalid_grant');
    expect(res.body.error_description).toMatch(/expired/);
  });

  test('when a token of another app is exchanged under this app, then it answers 400 invalid_grant', async () => {
    const other = await anApp(admin, project);
    const otherToken = await anonymousToken(other.id);
    expectOAuthError(await exchange(otherToken, appId), 400, 'invalid_grant');
    // The same token works for the app it belongs to.
    expect((await exchange(otherToken, other.id)).status).toBe(200);
  });

  test('when an API key is exchanged by a web_client app, or by an api app of another project, then it answers 400 invalid_grant', async () => {
    const { key } = await anApiKey(admin, project);
    expectOAuthError(await exchange(key, appId), 400, 'invalid_grant');
    const elsewhere = await anApp(admin, aProject(), { type: 'api', config: { type: 'api' } });
    expectOAuthError(await exchange(key, elsewhere.id), 400, 'invalid_grant');
  });

  test('when the audience is not in the catalog, or names a platform the app type may not use, then it answers 400 invalid_target', async () => {
    expectOAuthError(await exchange(subjectToken, appId, { audience: 'unknown-platform' }), 400, 'invalid_target');
    // `crm` is configured for support_copilot apps only; this is a web_client app.
    expectOAuthError(await exchange(subjectToken, appId, { audience: 'crm' }), 400, 'invalid_target');
  });

  test('when svc_app_id names no app, or a disabled one, then it answers 401 invalid_client', async () => {
    expectOAuthError(await exchange(subjectToken, 'app_does_not_exist'), 401, 'invalid_client');
    const p = aProject();
    const app = await anApp(admin, p);
    const token = await anonymousToken(app.id);
    expect((await admin.patch(`${projectPath(p)}/apps/${app.id}`, { enabled: false })).status).toBe(200);
    expectOAuthError(await exchange(token, app.id), 401, 'invalid_client');
  });
});

describe('signing keys', () => {
  test('when the key is rotated, then new tokens are signed with the new key and tokens signed before still verify against the key set', async () => {
    const p = aProject();
    const app = await anApp(admin, p);
    const subjectToken = await anonymousToken(app.id);
    const before = await exchange(subjectToken, app.id);
    expect(before.status).toBe(200);
    const oldKid = decodeProtectedHeader(before.body.access_token).kid;

    const rotated = await admin.post('/credential-gateway/signing-keys/rotate');
    expect(rotated.status).toBe(201);
    expect(rotated.body.data).toEqual({ kid: expect.any(String), alg: 'ES256', createdAt: expect.any(String) });
    expect(rotated.body.data.kid).not.toBe(oldKid);

    const after = await exchange(subjectToken, app.id);
    expect(after.status).toBe(200);
    expect(decodeProtectedHeader(after.body.access_token).kid).toBe(rotated.body.data.kid);

    const jwks = await http('GET', JWKS_URL);
    expect(jwks.status).toBe(200);
    expect(jwks.headers.get('cache-control')).toBe('public, max-age=300');
    const kids = (jwks.body.keys as Array<{ kid: string; use: string; alg: string; d?: string }>).map((k) => k.kid);
    expect(kids).toEqual(expect.arrayContaining([oldKid, rotated.body.data.kid]));
    for (const k of jwks.body.keys) expect(k).toMatchObject({ use: 'sig', kty: expect.any(String) });
    // Only public parts are published.
    expect(jwks.body.keys.some((k: { d?: string }) => k.d !== undefined)).toBe(false);
    await expect(verifyWithJwks(before.body.access_token, 'helpdesk')).resolves.toBeTruthy();
    await expect(verifyWithJwks(after.body.access_token, 'helpdesk')).resolves.toBeTruthy();
  });

  test('when someone other than the platform admin asks to rotate, then it answers 401 or 403 and the key set is unchanged', async () => {
    const p = aProject();
    const tenantToken = await aTenantToken(admin, p.tenantId);
    const before = await http('GET', JWKS_URL);
    const asTenant = await client(stack.gatewayUrl, tenantToken).post('/credential-gateway/signing-keys/rotate');
    expect(asTenant.status).toBe(403);
    const anonymous = await client(stack.gatewayUrl).post('/credential-gateway/signing-keys/rotate');
    expect(anonymous.status).toBe(401);
    expect((await http('GET', JWKS_URL)).body).toEqual(before.body);
  });
});
