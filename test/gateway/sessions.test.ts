import { aProject, eventually, http, projectPath } from '@platform/testkit';
import { admin, stack } from '../support/stack';

/** Sessions end with the access token they were made from; users and tenant owners can list and end them. */

async function aToken(tenantId: string, body: Record<string, unknown> = {}) {
  const res = await admin.post(`/manage/tenants/${tenantId}/access-tokens`, {
    name: 'sessions',
    role: 'admin',
    ...body,
  });
  expect(res.status).toBe(201);
  return { token: res.body.data.token as string, id: res.body.data.accessToken.id as string };
}

async function aSession(bearer: string, userAgent = 'sessions-test') {
  const res = await http('POST', `${stack.gatewayUrl}/manage/auth/session`, {
    token: bearer,
    headers: { 'user-agent': userAgent },
  });
  expect(res.status).toBe(201);
  const setCookie = res.headers.get('set-cookie') ?? '';
  return { cookie: setCookie.split(';')[0]!, setCookie, expiresAt: res.body.data.expiresAt as string };
}

const readWith = async (cookie: string, p: { tenantId: string; projectId: string }) =>
  (await http('GET', `${stack.gatewayUrl}${projectPath(p)}/api-keys`, { cookie })).status;

describe('sessions end with their access token', () => {
  test('when the access token a session was made from is revoked, then the session answers 401 at once', async () => {
    const p = aProject();
    const { token, id } = await aToken(p.tenantId);
    const { cookie } = await aSession(token);
    const other = await aSession((await aToken(p.tenantId)).token);
    // Used first, so every cache in between has seen it.
    expect(await readWith(cookie, p)).toBe(200);
    expect((await admin.delete(`/manage/tenants/${p.tenantId}/access-tokens/${id}`)).status).toBe(204);
    expect(await readWith(cookie, p)).toBe(401);
    // A session made from another token of the tenant goes on.
    expect(await readWith(other.cookie, p)).toBe(200);
    const listed = await http('GET', `${stack.gatewayUrl}/manage/tenants/${p.tenantId}/sessions`, {
      token: stack.adminToken,
    });
    expect(listed.body.data.map((s: { accessTokenId: string }) => s.accessTokenId)).not.toContain(id);
  });

  test('when the access token expires, then the session made from it expires with it, never later', async () => {
    const p = aProject();
    const tokenExpiresAt = new Date(Date.now() + 3000).toISOString();
    const { token } = await aToken(p.tenantId, { expiresAt: tokenExpiresAt });
    const { cookie, setCookie, expiresAt } = await aSession(token);
    expect(Date.parse(expiresAt)).toBeLessThanOrEqual(Date.parse(tokenExpiresAt));
    expect(Number(/Max-Age=(\d+)/.exec(setCookie)?.[1])).toBeLessThanOrEqual(3);
    expect(setCookie).toMatch(/SameSite=Lax/);
    expect(await readWith(cookie, p)).toBe(200);
    await eventually(
      async () => (await readWith(cookie, p)) === 401,
      'the session refused once its token expired',
      15_000,
    );
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(expiresAt));
  });

  test('when a token has already expired, then no session is made from it', async () => {
    const p = aProject();
    const { token } = await aToken(p.tenantId, { expiresAt: new Date(Date.now() - 1000).toISOString() });
    expect((await http('POST', `${stack.gatewayUrl}/manage/auth/session`, { token })).status).toBe(401);
  });
});

describe('listing and ending sessions', () => {
  test("when a user lists their sessions, then they see their own (the current one marked) and no other user's, and can end one of them", async () => {
    const p = aProject();
    const mine = await aToken(p.tenantId, { userId: 'alice', role: 'member' });
    const first = await aSession(mine.token, 'browser-one');
    const second = await aSession(mine.token, 'browser-two');
    const bob = await aSession((await aToken(p.tenantId, { userId: 'bob' })).token);

    const list = await http('GET', `${stack.gatewayUrl}/manage/auth/sessions`, { cookie: first.cookie });
    expect(list.status).toBe(200);
    expect(list.body.pagination).toMatchObject({ total: 2 });
    expect(list.body.data).toHaveLength(2);
    for (const s of list.body.data)
      expect(s).toMatchObject({
        kind: 'user',
        tenantId: p.tenantId,
        userId: 'alice',
        role: 'member',
        accessTokenId: mine.id,
      });
    const current = list.body.data.find((s: { current: boolean }) => s.current);
    expect(current.userAgent).toBe('browser-one');
    const secondId = list.body.data.find((s: { current: boolean }) => !s.current).id as string;
    expect(JSON.stringify(list.body)).not.toContain(first.cookie.split('=')[1]);

    // Bob's session is not Alice's to end.
    const bobsId = (await http('GET', `${stack.gatewayUrl}/manage/auth/sessions`, { cookie: bob.cookie })).body.data[0]
      .id as string;
    expect(
      (await http('DELETE', `${stack.gatewayUrl}/manage/auth/sessions/${bobsId}`, { cookie: first.cookie })).status,
    ).toBe(404);
    expect(await readWith(bob.cookie, p)).toBe(200);

    const ended = await http('DELETE', `${stack.gatewayUrl}/manage/auth/sessions/${secondId}`, { token: mine.token });
    expect(ended.status).toBe(204);
    expect(await readWith(second.cookie, p)).toBe(401);
    expect(await readWith(first.cookie, p)).toBe(200);
    const after = await http('GET', `${stack.gatewayUrl}/manage/auth/sessions`, { token: mine.token });
    expect(after.body.data.map((s: { id: string }) => s.id)).toEqual([current.id]);
  });

  test("when an owner ends a tenant's sessions, then every session of the tenant answers 401, another tenant's go on, and a non-owner may not", async () => {
    const p = aProject();
    const q = aProject();
    const owner = await aToken(p.tenantId, { role: 'owner', userId: 'owner-1' });
    const adminOfP = await aToken(p.tenantId, { role: 'admin', userId: 'carol' });
    const a = await aSession(adminOfP.token);
    const b = await aSession((await aToken(p.tenantId, { role: 'viewer', userId: 'dave' })).token);
    const elsewhere = await aSession((await aToken(q.tenantId)).token);
    const url = `${stack.gatewayUrl}/manage/tenants/${p.tenantId}/sessions`;

    expect((await http('GET', url, { token: adminOfP.token })).status).toBe(403);
    expect((await http('DELETE', url, { token: adminOfP.token })).status).toBe(403);
    const listed = await http('GET', url, { token: owner.token });
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((s: { userId: string }) => s.userId).sort()).toEqual(['carol', 'dave']);

    // One user's sessions, then one session by id, then all.
    const onlyDave = await http('DELETE', `${url}?userId=dave`, { token: owner.token });
    expect(onlyDave.status).toBe(200);
    expect(onlyDave.body).toEqual({ data: { ended: 1 } });
    expect(await readWith(b.cookie, p)).toBe(401);
    expect(await readWith(a.cookie, p)).toBe(200);
    expect((await http('DELETE', `${url}/not-a-session`, { token: owner.token })).status).toBe(404);
    const all = await http('DELETE', url, { token: owner.token });
    expect(all.body).toEqual({ data: { ended: 1 } });
    expect(await readWith(a.cookie, p)).toBe(401);
    expect(await readWith(elsewhere.cookie, q)).toBe(200);
    expect((await http('GET', url, { token: owner.token })).body.data).toEqual([]);
  });

  test('when a request carries a malformed session cookie beside a bearer token, then the bearer is used and the listing answers 200', async () => {
    const name = (await aSession(stack.adminToken)).cookie.split('=')[0]!;
    const res = await http('GET', `${stack.gatewayUrl}/manage/auth/sessions`, {
      token: stack.adminToken,
      cookie: `${name}=%E0%A4%A`,
    });
    expect(res.status).toBe(200);
    expect(res.body.data.every((s: { current: boolean }) => !s.current)).toBe(true);
  });

  test('when a session id is not in the session id alphabet, then it answers 400 problem+json', async () => {
    const res = await http('DELETE', `${stack.gatewayUrl}/manage/auth/sessions/${encodeURIComponent('a b')}`, {
      token: stack.adminToken,
    });
    expect(res.status).toBe(400);
    expect(res.contentType).toMatch(/^application\/problem\+json/);
  });
});
