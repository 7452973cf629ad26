import { adminClient, aProject, anApiKey, aTenantToken, client, http, projectPath, testStack } from '@platform/testkit';

const stack = testStack();
const admin = adminClient(stack);

function expectProblem(res: { status: number; contentType: string; body: any }, status: number) {
  expect(res.status).toBe(status);
  expect(res.contentType).toMatch(/application\/problem\+json/);
  expect(res.body).toMatchObject({ status, code: expect.any(String), title: expect.any(String), detail: expect.any(String), requestId: expect.any(String) });
  expect(res.body.error).toEqual({ code: res.body.code, message: res.body.detail });
}

describe('API keys', () => {
  test('when a key is created, then its value is shown once and the record can be read, listed, changed and deleted', async () => {
    const p = aProject();
    const created = await admin.post(`${projectPath(p)}/api-keys`, { agentId: 'agent-1', name: 'first' });
    expect(created.status).toBe(201);
    const { apiKey, key } = created.body.data;
    expect(key).toMatch(/^sk_[0-9A-Za-z]{12}\.[A-Za-z0-9_-]{43}$/);
    expect(apiKey).toMatchObject({ name: 'first', agentId: 'agent-1', publicId: apiKey.id, keyPrefix: key.slice(0, 12), expiresAt: null, lastUsedAt: null });
    expect(JSON.stringify(apiKey)).not.toContain(key.split('.')[1]);

    const read = await admin.get(`${projectPath(p)}/api-keys/${apiKey.id}`);
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual(apiKey);
    expect(read.body.data.key).toBeUndefined();

    const list = await admin.get(`${projectPath(p)}/api-keys`);
    expect(list.body).toEqual({ data: [apiKey], pagination: { page: 1, limit: 10, total: 1, pages: 1, completedCount: 1 } });

    const patched = await admin.patch(`${projectPath(p)}/api-keys/${apiKey.id}`, { name: 'renamed' });
    expect(patched.status).toBe(200);
    expect(patched.body.data.name).toBe('renamed');

    const del = await admin.delete(`${projectPath(p)}/api-keys/${apiKey.id}`);
    expect(del.status).toBe(204);
    expect(del.body).toBeUndefined();
    expectProblem(await admin.get(`${projectPath(p)}/api-keys/${apiKey.id}`), 404);
    const again = await admin.delete(`${projectPath(p)}/api-keys/${apiKey.id}`);
    expect(again.status).toBe(404);
    expect(again.body).toMatchObject({ error: 'not_found', message: 'API key not found' });
  });

  test('when the list is filtered by agent and paged, then only that agent\'s keys come back with the right pagination', async () => {
    const p = aProject();
    for (let i = 0; i < 3; i++) await anApiKey(admin, p, { agentId: 'a1', name: `k${i}` });
    await anApiKey(admin, p, { agentId: 'a2' });
    const page = await admin.get(`${projectPath(p)}/api-keys?agentId=a1&page=2&limit=2`);
    expect(page.status).toBe(200);
    expect(page.body.data).toHaveLength(1);
    expect(page.body.pagination).toEqual({ page: 2, limit: 2, total: 3, pages: 2, completedCount: 3 });
    for (const bad of ['page=0', 'limit=0', 'limit=101', 'page=x']) expectProblem(await admin.get(`${projectPath(p)}/api-keys?${bad}`), 400);
  });

  test.each([
    ['a missing name', { agentId: 'a1' }],
    ['an empty name', { agentId: 'a1', name: '' }],
    ['a name over 256 characters', { agentId: 'a1', name: 'x'.repeat(257) }],
    ['an agentId that is not a RID', { agentId: 'a b', name: 'n' }],
    ['a missing agentId', { name: 'n' }],
    ['an unknown field', { agentId: 'a1', name: 'n', secret: 'x' }],
    ['an expiresAt that is not a date-time', { agentId: 'a1', name: 'n', expiresAt: 'tomorrow' }],
  ])('when the body has %s, then it answers 400 problem+json and stores nothing', async (_what, body) => {
    const p = aProject();
    const res = await admin.post(`${projectPath(p)}/api-keys`, body);
    expectProblem(res, 400);
    expect(res.body.errors.length).toBeGreaterThan(0);
    expect(res.body.errors[0]).toMatchObject({ pointer: expect.any(String), detail: expect.any(String) });
    expect((await admin.get(`${projectPath(p)}/api-keys`)).body.pagination.total).toBe(0);
  });

  test('when the body is not JSON or not declared as JSON, then it answers 400 or 415 and stores nothing', async () => {
    const p = aProject();
    const url = `${stack.gatewayUrl}${projectPath(p)}/api-keys`;
    expectProblem(await http('POST', url, { token: stack.adminToken, raw: '{"agentId":', headers: { 'content-type': 'application/json' } }), 400);
    expectProblem(await http('POST', url, { token: stack.adminToken, raw: 'agentId=a1&name=n', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 415);
    expect((await admin.get(`${projectPath(p)}/api-keys`)).body.pagination.total).toBe(0);
  });

  test('when the projectId breaks its pattern, then it answers 400', async () => {
    expectProblem(await admin.get(`/manage/tenants/t1/projects/Bad_Project/api-keys`), 400);
  });

  test('when no credential or a wrong one is sent, then it answers 401', async () => {
    const p = aProject();
    expectProblem(await client(stack.gatewayUrl).get(`${projectPath(p)}/api-keys`), 401);
    expectProblem(await client(stack.gatewayUrl, 'not-a-token').get(`${projectPath(p)}/api-keys`), 401);
  });

  test("when tenant B's token is used on tenant A's keys, then it answers 403 and changes nothing", async () => {
    const a = aProject();
    const b = aProject();
    const { apiKey } = await anApiKey(admin, a);
    const tokenB = await aTenantToken(admin, b.tenantId);
    const asB = client(stack.gatewayUrl, tokenB);
    expectProblem(await asB.get(`${projectPath(a)}/api-keys`), 403);
    expectProblem(await asB.get(`${projectPath(a)}/api-keys/${apiKey.id}`), 403);
    expect((await asB.delete(`${projectPath(a)}/api-keys/${apiKey.id}`)).status).toBe(403);
    expect((await asB.post(`${projectPath(a)}/api-keys`, { agentId: 'x', name: 'x' })).status).toBe(403);
    expect((await admin.get(`${projectPath(a)}/api-keys/${apiKey.id}`)).status).toBe(200);
    // B's own tenant works, and B never sees A's records there.
    const own = await asB.get(`${projectPath({ tenantId: b.tenantId, projectId: a.projectId })}/api-keys`);
    expect(own.status).toBe(200);
    expect(own.body.data).toEqual([]);
  });

  test('when a viewer token tries to create a key, then it answers 403', async () => {
    const p = aProject();
    const viewer = client(stack.gatewayUrl, await aTenantToken(admin, p.tenantId, 'viewer'));
    expect((await viewer.get(`${projectPath(p)}/api-keys`)).status).toBe(200);
    expectProblem(await viewer.post(`${projectPath(p)}/api-keys`, { agentId: 'a', name: 'n' }), 403);
  });

  test('when a key is deleted or expires, then the run API refuses it at once', async () => {
    const p = aProject();
    const { key, apiKey } = await anApiKey(admin, p);
    const run = client(stack.gatewayUrl, key);
    expect((await run.post('/run/v1/events', { type: 'warm.cache' })).status).toBe(201);
    expect((await admin.delete(`${projectPath(p)}/api-keys/${apiKey.id}`)).status).toBe(204);
    expectProblem(await run.post('/run/v1/events', { type: 'after.delete' }), 401);

    const soon = await anApiKey(admin, p, { expiresAt: new Date(Date.now() + 1500).toISOString() });
    const run2 = client(stack.gatewayUrl, soon.key);
    expect((await run2.post('/run/v1/events', { type: 'before.expiry' })).status).toBe(201);
    await new Promise((r) => setTimeout(r, 1700));
    expectProblem(await run2.post('/run/v1/events', { type: 'after.expiry' }), 401);
  });

  test('when a key is created with an expiry in the past, then it answers 422', async () => {
    const p = aProject();
    expectProblem(await admin.post(`${projectPath(p)}/api-keys`, { agentId: 'a', name: 'n', expiresAt: '2001-01-01T00:00:00Z' }), 422);
  });

  test('when the playground token is asked without a session cookie, then it fails with the legacy body; with a session it is issued', async () => {
    const p = aProject();
    const noCookie = await admin.post(`/manage/tenants/${p.tenantId}/playground/token`, { projectId: p.projectId, agentId: 'a1' });
    expect(noCookie.status).toBe(401);
    expect(noCookie.body).toMatchObject({ error: 'unauthorized', message: expect.any(String) });
    expect(noCookie.body).toHaveProperty('details');

    const session = await admin.post('/manage/auth/session');
    expect(session.status).toBe(201);
    const cookie = session.headers.get('set-cookie')!.split(';')[0]!;
    expect(cookie).toMatch(/^platform\.session_token=/);
    const anon = client(stack.gatewayUrl);
    const token = await anon.post(`/manage/tenants/${p.tenantId}/playground/token`, { projectId: p.projectId, agentId: 'a1' }, { cookie });
    expect(token.status).toBe(200);
    expect(token.body).toMatchObject({ appId: 'app_playground', apiKey: expect.any(String), expiresAt: expect.any(String) });
    // The cookie also works on management routes, and the token works on the run API.
    expect((await anon.get(`${projectPath(p)}/api-keys`, { cookie })).status).toBe(200);
    const ev = await client(stack.gatewayUrl, token.body.apiKey).post('/run/v1/events', { type: 'playground.tested' });
    expect(ev.status).toBe(201);
    expect(ev.body.data).toMatchObject({ tenantId: p.tenantId, projectId: p.projectId, agentId: 'a1', serverMetadata: { authMethod: 'playground_token' } });
    const bad = await anon.post(`/manage/tenants/${p.tenantId}/playground/token`, { projectId: p.projectId }, { cookie });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: 'bad_request' });
  });
});
