import { anInstallLink, aProject, installChatWorkspace, signChatappState } from '@platform/testkit';
import { admin, CHAT, fake, stack, tenantClient, withChatAgents } from '../support/chatapp';

async function callback(query: Record<string, string>) {
  const url = new URL(`${stack.gatewayUrl}${CHAT}/oauth_redirect`);
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  const res = await fetch(url, { redirect: 'manual' });
  return { status: res.status, location: new URL(res.headers.get('location') ?? 'http://none/') };
}

/** The install route with an install link of `tenantId` minted by the admin, plus `extra` query parameters. */
async function installUrl(tenantId: string, body: Record<string, unknown> = {}, extra: Record<string, string> = {}) {
  const url = await anInstallLink(stack.gatewayUrl, stack.adminToken, { tenantId, ...body });
  for (const [k, v] of Object.entries(extra)) url.searchParams.set(k, v);
  return url;
}

async function startState(tenantId: string) {
  const res = await fetch(await installUrl(tenantId), { redirect: 'manual' });
  return new URL(res.headers.get('location')!).searchParams.get('state')!;
}

const workspacesOf = async (tenantId: string) =>
  (await admin.get(`${CHAT}/workspaces?tenantId=${tenantId}`)).body.workspaces as Array<{ teamId: string }>;

describe('installing the chat app needs an install link of the tenant', () => {
  test("when install names a tenant without an install link, or with a forged, reused or other tenant's link, then the result page says install_not_authorized and the chat product is never asked", async () => {
    const p = aProject();
    const refused = async (url: string | URL) => {
      const res = await fetch(url, { redirect: 'manual' });
      expect(res.status).toBe(302);
      const to = new URL(res.headers.get('location')!);
      expect(`${to.origin}${to.pathname}`).not.toBe(`${stack.chatappFakeUrl}/oauth/v2/authorize`);
      expect(to.searchParams.get('error')).toBe('install_not_authorized');
      return to.searchParams.get('reason');
    };
    expect(await refused(`${stack.gatewayUrl}${CHAT}/install?tenant_id=${p.tenantId}`)).toBe('missing');
    const link = await installUrl(p.tenantId);
    const token = link.searchParams.get('link')!;
    expect(await refused(`${stack.gatewayUrl}${CHAT}/install?link=${token.slice(0, -4)}AAAA`)).toBe('bad_signature');
    const other = aProject();
    expect(await refused(`${link}&tenant_id=${other.tenantId}`)).toBe('tenant_mismatch');
    // A good link starts one installation, bound to the link's tenant whatever the query says otherwise.
    const first = await fetch(link, { redirect: 'manual' });
    expect(new URL(first.headers.get('location')!).searchParams.get('client_id')).toBe(stack.env.CHATAPP_CLIENT_ID);
    expect(await refused(link)).toBe('replayed');
    expect(await workspacesOf(p.tenantId)).toEqual([]);
  });

  test("when a tenant credential mints an install link, then it binds its own tenant only; another tenant's id is 403 and a viewer may not mint", async () => {
    const p = aProject();
    const other = aProject();
    const token = (
      await admin.post(`/manage/tenants/${p.tenantId}/access-tokens`, { name: 'installer', role: 'admin' })
    ).body.data.token as string;
    const mint = (bearer: string, body: Record<string, unknown>) =>
      fetch(`${stack.gatewayUrl}${CHAT}/install-links`, {
        method: 'POST',
        headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    expect((await mint(token, { tenantId: other.tenantId })).status).toBe(403);
    const viewer = (await admin.post(`/manage/tenants/${p.tenantId}/access-tokens`, { name: 'viewer', role: 'viewer' }))
      .body.data.token as string;
    expect((await mint(viewer, {})).status).toBe(403);
    expect(
      (
        await fetch(`${stack.gatewayUrl}${CHAT}/install-links`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{}',
        })
      ).status,
    ).toBe(401);

    const team = await fake.createTeam();
    const { result } = await installChatWorkspace(stack.gatewayUrl, {
      token,
      tenantId: p.tenantId,
      teamId: team.teamId,
    });
    expect(result.searchParams.get('success')).toBe('true');
    expect(result.searchParams.get('tenant_id')).toBe(p.tenantId);
    expect((await workspacesOf(p.tenantId)).map((w) => w.teamId)).toEqual([team.teamId]);
  });
});

describe('installing the chat app', () => {
  test('when install is called, then it redirects to the authorize page with a signed state, and include_webhook adds the webhook scope', async () => {
    const plain = await fetch(await installUrl('acme', { projectId: 'demo' }), { redirect: 'manual' });
    expect(plain.status).toBe(302);
    const to = new URL(plain.headers.get('location')!);
    expect(`${to.origin}${to.pathname}`).toBe(`${stack.chatappFakeUrl}/oauth/v2/authorize`);
    expect(to.searchParams.get('client_id')).toBe(stack.env.CHATAPP_CLIENT_ID);
    expect(to.searchParams.get('redirect_uri')).toBe(`${stack.gatewayUrl}${CHAT}/oauth_redirect`);
    expect(to.searchParams.get('state')).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(to.searchParams.get('scope')!.split(',')).not.toContain('incoming-webhook');

    const withHook = await fetch(await installUrl('acme', {}, { include_webhook: 'true' }), { redirect: 'manual' });
    expect(new URL(withHook.headers.get('location')!).searchParams.get('scope')!.split(',')).toContain(
      'incoming-webhook',
    );
  });

  test('when the gateway sits behind a proxy that forwards an https request, then the redirect_uri it builds is https (a trusted peer)', async () => {
    // The test reaches the gateway over loopback, which TRUST_PROXY trusts by default.
    const res = await fetch(await installUrl('acme'), {
      redirect: 'manual',
      headers: { 'x-forwarded-proto': 'https, http' },
    });
    expect(res.status).toBe(302);
    const redirectUri = new URL(res.headers.get('location')!).searchParams.get('redirect_uri');
    expect(redirectUri).toBe(`https://${new URL(stack.gatewayUrl).host}${CHAT}/oauth_redirect`);
    // The same connection's next request without the header is plain http again.
    const plain = await fetch(await installUrl('acme'), { redirect: 'manual' });
    expect(new URL(plain.headers.get('location')!).searchParams.get('redirect_uri')).toBe(
      `${stack.gatewayUrl}${CHAT}/oauth_redirect`,
    );
  });

  test('when a script asks install and the callback for JSON, then each answers 200 with where a browser would be redirected', async () => {
    const asJson = { redirect: 'manual' as const, headers: { accept: 'application/json' } };
    const res = await fetch(await installUrl('acme', { projectId: 'demo' }), asJson);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(res.headers.get('location')).toBeNull();
    const { location } = (await res.json()) as { location: string };
    const to = new URL(location);
    expect(`${to.origin}${to.pathname}`).toBe(`${stack.chatappFakeUrl}/oauth/v2/authorize`);
    expect(to.searchParams.get('client_id')).toBe(stack.env.CHATAPP_CLIENT_ID);
    const denied = await fetch(
      `${stack.gatewayUrl}${CHAT}/oauth_redirect?error=access_denied&state=${to.searchParams.get('state')}`,
      asJson,
    );
    expect(denied.status).toBe(200);
    expect(new URL(((await denied.json()) as { location: string }).location).searchParams.get('error')).toBe(
      'access_denied',
    );
  });

  test('when install gets a tenant_id that is not an id, then it answers 400 and redirects nowhere', async () => {
    const res = await fetch(`${stack.gatewayUrl}${CHAT}/install?tenant_id=${encodeURIComponent('a b/c')}`, {
      redirect: 'manual',
    });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/problem+json');
    expect(res.headers.get('location')).toBeNull();
  });

  test('when the callback has no state, a forged state or an expired state, then the result page says invalid_state with the reason and nothing is installed', async () => {
    const p = aProject();
    const missing = await callback({ code: 'whatever' });
    expect(missing.status).toBe(302);
    expect(Object.fromEntries(missing.location.searchParams)).toEqual({ error: 'invalid_state', reason: 'missing' });

    const genuine = await startState(p.tenantId);
    const [head, payload, sig] = genuine.split('.');
    const forged = await callback({
      code: 'whatever',
      state: `${head}.${payload}.${sig!.startsWith('AAAA') ? 'BBBB' : 'AAAA'}${sig!.slice(4)}`,
    });
    expect(forged.location.searchParams.get('error')).toBe('invalid_state');
    expect(forged.location.searchParams.get('reason')).toBe('bad_signature');

    const expired = await callback({
      code: 'whatever',
      state: signChatappState(stack.env.CHATAPP_STATE_SECRET!, { tenantId: p.tenantId }, -60),
    });
    expect(Object.fromEntries(expired.location.searchParams)).toEqual({ error: 'invalid_state', reason: 'expired' });

    const garbage = await callback({ code: 'whatever', state: 'not-a-state' });
    expect(garbage.location.searchParams.get('reason')).toBe('malformed');
    expect(await workspacesOf(p.tenantId)).toEqual([]);
  });

  test('when a callback URL is replayed, then the second use says invalid_state (replayed) and the code is not exchanged again', async () => {
    const p = aProject();
    const team = await fake.createTeam();
    const { callbackUrl, result } = await installChatWorkspace(stack.gatewayUrl, {
      token: stack.adminToken,
      tenantId: p.tenantId,
      teamId: team.teamId,
    });
    expect(result.searchParams.get('success')).toBe('true');
    const again = await fetch(callbackUrl, { redirect: 'manual' });
    const to = new URL(again.headers.get('location')!);
    expect(Object.fromEntries(to.searchParams)).toEqual({
      error: 'invalid_state',
      reason: 'replayed',
      tenant_id: p.tenantId,
    });
    expect(await fake.calls(team.teamId, 'oauth.v2.access')).toHaveLength(1);
  });

  test("when the user denies the installation, then the result page carries the chat product's error and nothing is installed", async () => {
    const p = aProject();
    const team = await fake.createTeam();
    const { result } = await installChatWorkspace(stack.gatewayUrl, {
      token: stack.adminToken,
      tenantId: p.tenantId,
      teamId: team.teamId,
      deny: true,
    });
    expect(result.searchParams.get('error')).toBe('access_denied');
    expect(result.searchParams.get('success')).toBeNull();
    expect(await workspacesOf(p.tenantId)).toEqual([]);
  });

  test('when the callback has a valid state but no code, then the result page says no_code', async () => {
    const p = aProject();
    const res = await callback({ state: await startState(p.tenantId) });
    expect(Object.fromEntries(res.location.searchParams)).toEqual({ error: 'no_code', tenant_id: p.tenantId });
  });

  test('when the chat product refuses the code exchange, then the result page says oauth_failed with its error and nothing is installed', async () => {
    const p = aProject();
    const team = await fake.createTeam();
    await fake.fail(team.teamId, { method: 'oauth.v2.access', error: 'invalid_team_for_non_distributed_app' });
    const { result } = await installChatWorkspace(stack.gatewayUrl, {
      token: stack.adminToken,
      tenantId: p.tenantId,
      teamId: team.teamId,
    });
    expect(Object.fromEntries(result.searchParams)).toEqual({
      error: 'oauth_failed',
      reason: 'invalid_team_for_non_distributed_app',
      tenant_id: p.tenantId,
    });
    expect(await workspacesOf(p.tenantId)).toEqual([]);
  });

  test('when a workspace installed for one tenant is installed for another, then the second is refused and the first keeps it', async () => {
    const a = aProject();
    const b = aProject();
    const team = await fake.createTeam();
    await installChatWorkspace(stack.gatewayUrl, {
      token: stack.adminToken,
      tenantId: a.tenantId,
      teamId: team.teamId,
    });
    const { result } = await installChatWorkspace(stack.gatewayUrl, {
      token: stack.adminToken,
      tenantId: b.tenantId,
      teamId: team.teamId,
    });
    expect(result.searchParams.get('error')).toBe('workspace_already_installed');
    expect((await workspacesOf(a.tenantId)).map((w) => w.teamId)).toEqual([team.teamId]);
    expect(await workspacesOf(b.tenantId)).toEqual([]);
  });

  test('when the same tenant installs again, then the workspace keeps its connection and settings and uses the new token', async () => {
    const p = await withChatAgents(aProject());
    const team = await fake.createTeam();
    await installChatWorkspace(stack.gatewayUrl, {
      token: stack.adminToken,
      tenantId: p.tenantId,
      projectId: p.projectId,
      teamId: team.teamId,
    });
    const owner = await tenantClient(p.tenantId, 'admin', 'owner-1');
    const before = (await owner.get(`${CHAT}/workspaces/${team.teamId}`)).body;
    await owner.put(`${CHAT}/workspaces/${team.teamId}/settings`, {
      defaultAgent: { agentId: 'helper', projectId: p.projectId },
    });
    await installChatWorkspace(stack.gatewayUrl, {
      token: stack.adminToken,
      tenantId: p.tenantId,
      projectId: p.projectId,
      teamId: team.teamId,
    });
    const after = (await owner.get(`${CHAT}/workspaces/${team.teamId}`)).body;
    expect(after).toEqual({
      ...before,
      defaultAgent: { agentId: 'helper', grantAccessToMembers: false, projectId: p.projectId },
    });
    const health = await owner.get(`${CHAT}/workspaces/${team.teamId}/health`);
    expect(health.body.healthy).toBe(true);
  });
});
