import { anApp, aProject, aTenantToken, http, projectPath } from '@platform/testkit';
import { admin, stack } from '../support/stack';

const cookieName = `${stack.env.SESSION_COOKIE_PREFIX ?? 'platform'}.session_token`;

async function aSession(bearer: string) {
  const res = await http('POST', `${stack.gatewayUrl}/manage/auth/session`, { token: bearer });
  expect(res.status).toBe(201);
  const setCookie = res.headers.get('set-cookie') ?? '';
  expect(setCookie).toContain(`${cookieName}=`);
  expect(setCookie).toMatch(/HttpOnly/i);
  return setCookie.split(';')[0]!;
}

describe('session cookie', () => {
  test('when a session is opened with a tenant token, then its cookie is accepted on a management route with the token role, and is refused after logout', async () => {
    const p = aProject();
    await anApp(admin, p);
    const cookie = await aSession(await aTenantToken(admin, p.tenantId, 'member'));
    const list = await http('GET', `${stack.gatewayUrl}${projectPath(p)}/apps`, { cookie });
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ role: 'member', tenantHasAnyApps: true });
    expect(
      (await http('GET', `${stack.gatewayUrl}/manage/tenants/${aProject().tenantId}/apps`, { cookie })).status,
    ).toBe(403);

    expect((await http('DELETE', `${stack.gatewayUrl}/manage/auth/session`, { cookie })).status).toBe(204);
    expect((await http('GET', `${stack.gatewayUrl}${projectPath(p)}/apps`, { cookie })).status).toBe(401);
  });

  test('when the playground token is asked with the session cookie, then it answers 200; with a bearer token or a bad cookie, then 401 in the legacy body', async () => {
    const p = aProject();
    const cookie = await aSession(stack.adminToken);
    const url = `${stack.gatewayUrl}/manage/tenants/${p.tenantId}/playground/token`;
    const ok = await http('POST', url, { cookie, json: { projectId: p.projectId, agentId: 'agent-1' } });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({
      appId: 'app_playground',
      apiKey: expect.any(String),
      expiresAt: expect.any(String),
    });

    const withBearer = await http('POST', url, {
      token: stack.adminToken,
      json: { projectId: p.projectId, agentId: 'agent-1' },
    });
    expect(withBearer.status).toBe(401);
    expect(withBearer.contentType).toMatch(/^application\/json/);
    expect(withBearer.body).toEqual({ details: null, error: 'unauthorized', message: expect.any(String) });
    const badCookie = await http('POST', url, {
      cookie: `${cookieName}=not-a-session-value-000000`,
      json: { projectId: p.projectId, agentId: 'agent-1' },
    });
    expect(badCookie.status).toBe(401);
    expect(Object.keys(badCookie.body).sort()).toEqual(['details', 'error', 'message']);

    // The playground token works on the run API.
    const ev = await http('POST', `${stack.gatewayUrl}/run/v1/events`, {
      token: ok.body.apiKey,
      json: { type: 'playground.used' },
    });
    expect(ev.status).toBe(201);
    expect(ev.body.data.serverMetadata).toEqual({ authMethod: 'playground_token' });
    // Clients that echo the returned appId as x-app-id keep working.
    const withAppId = await http('POST', `${stack.gatewayUrl}/run/v1/events`, {
      token: ok.body.apiKey,
      json: { type: 'playground.used' },
      headers: { 'x-app-id': ok.body.appId },
    });
    expect(withAppId.status).toBe(201);
  });
});
