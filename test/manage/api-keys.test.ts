import { ProblemError } from '@platform/client';
import {
  adminApi,
  aProject,
  aProjectWithAgents,
  anApiKey,
  aTenantToken,
  client,
  eventually,
  http,
  projectPath,
} from '@platform/testkit';
import { admin, stack } from '../support/stack';
import { problemOf } from '../support/expect-problem';

const api = adminApi(stack);

function expectProblem(res: { status: number; contentType: string; body: any }, status: number) {
  expect(res.status).toBe(status);
  expect(res.contentType).toMatch(/application\/problem\+json/);
  expect(res.body).toMatchObject({
    status,
    code: expect.any(String),
    title: expect.any(String),
    detail: expect.any(String),
    requestId: expect.any(String),
  });
  expect(res.body.error).toEqual({ code: res.body.code, message: res.body.detail });
}

describe('API keys', () => {
  test('when a key is created, then its value is shown once and the record can be read, listed, changed and deleted', async () => {
    const p = await aProjectWithAgents(admin);
    const created = await api.createApiKey({ params: p, body: { agentId: 'agent-1', name: 'first' } });
    const { apiKey, key } = created.data;
    expect(key).toMatch(/^sk_[0-9A-Za-z]{12}\.[A-Za-z0-9_-]{43}$/);
    expect(apiKey).toMatchObject({
      name: 'first',
      agentId: 'agent-1',
      publicId: apiKey.id,
      keyPrefix: key.slice(0, 12),
      expiresAt: null,
      lastUsedAt: null,
    });
    expect(JSON.stringify(apiKey)).not.toContain(key.split('.')[1]);

    const read = await api.getApiKey({ params: { ...p, id: apiKey.id } });
    expect(read.data).toEqual(apiKey);
    expect((read.data as Record<string, unknown>).key).toBeUndefined();

    const list = await api.listApiKeys({ params: p });
    expect(list).toEqual({ data: [apiKey], pagination: { page: 1, limit: 10, total: 1, pages: 1, completedCount: 1 } });

    const patched = await api.updateApiKey({ params: { ...p, id: apiKey.id }, body: { name: 'renamed' } });
    expect(patched.data.name).toBe('renamed');

    await expect(api.deleteApiKey({ params: { ...p, id: apiKey.id } })).resolves.toBeUndefined();
    expectProblem(await admin.get(`${projectPath(p)}/api-keys/${apiKey.id}`), 404);
    const again = await problemOf(api.deleteApiKey({ params: { ...p, id: apiKey.id } }));
    expect(again).toMatchObject({ status: 404, code: 'not_found', detail: 'API key not found' });
    expect(again.body).toMatchObject({ error: 'not_found', message: 'API key not found' });
  });

  test("when the list is filtered by agent and paged, then only that agent's keys come back with the right pagination, and the client walks every page", async () => {
    const p = aProject();
    for (let i = 0; i < 3; i++) await anApiKey(admin, p, { agentId: 'a1', name: `k${i}` });
    await anApiKey(admin, p, { agentId: 'a2' });
    const page = await api.listApiKeys({ params: p, query: { agentId: 'a1', page: 2, limit: 2 } });
    expect(page.data).toHaveLength(1);
    expect(page.pagination).toEqual({ page: 2, limit: 2, total: 3, pages: 2, completedCount: 3 });
    const all = await api.listAll(api.ops.listApiKeys, { params: p, query: { agentId: 'a1' } }, { limit: 1 });
    expect(all.map((k) => k.name).sort()).toEqual(['k0', 'k1', 'k2']);
    for (const bad of ['page=0', 'limit=0', 'limit=101', 'page=x'])
      expectProblem(await admin.get(`${projectPath(p)}/api-keys?${bad}`), 400);
  });

  test('when a project holds more keys than one read of a list, then every page tells the exact total through creates and deletes', async () => {
    const p = await aProjectWithAgents(admin, 'a0', 'a1');
    const ids: string[] = [];
    for (let i = 0; i < 105; i++)
      ids.push((await api.createApiKey({ params: p, body: { agentId: `a${i % 2}`, name: `k${i}` } })).data.apiKey.id);
    const pages = await Promise.all(
      [1, 6, 11].map(async (page) => (await api.listApiKeys({ params: p, query: { page, limit: 10 } })).pagination),
    );
    expect(pages).toEqual([
      { page: 1, limit: 10, total: 105, pages: 11, completedCount: 10 },
      { page: 6, limit: 10, total: 105, pages: 11, completedCount: 60 },
      { page: 11, limit: 10, total: 105, pages: 11, completedCount: 105 },
    ]);
    await api.deleteApiKey({ params: { ...p, id: ids[0]! } });
    expect((await api.listApiKeys({ params: p, query: { limit: 10 } })).pagination.total).toBe(104);
    const added = (await anApiKey(admin, p, { agentId: 'a1' })).apiKey;
    const first = await api.listApiKeys({ params: p, query: { limit: 10 } });
    expect(first.pagination.total).toBe(105);
    expect(first.data[0]).toEqual(added);
    expect((await api.listApiKeys({ params: p, query: { agentId: 'a1', limit: 10 } })).pagination.total).toBe(53);
    const other = aProject();
    await anApiKey(admin, other, {});
    expect((await api.listApiKeys({ params: other, query: { limit: 1 } })).pagination.total).toBe(1);
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
    const problem = await problemOf(api.createApiKey({ params: p, body: body as never }));
    expect(problem).toMatchObject({ status: 400, code: 'bad_request' });
    expect(problem.errors.length).toBeGreaterThan(0);
    expect(problem.errors[0]).toMatchObject({ pointer: expect.any(String), detail: expect.any(String) });
    expect((await api.listApiKeys({ params: p })).pagination.total).toBe(0);
  });

  test('when the key names an agent the project does not have, then create and change answer 422 at /agentId and nothing changes', async () => {
    const p = await aProjectWithAgents(admin);
    const problem = await problemOf(api.createApiKey({ params: p, body: { agentId: 'no-such-agent', name: 'n' } }));
    expect(problem).toMatchObject({
      status: 422,
      code: 'unprocessable_entity',
      errors: [{ pointer: '/agentId', detail: expect.stringContaining('no-such-agent') }],
    });
    // An agent of another project of the same tenant is not this project's.
    const sibling = { tenantId: p.tenantId, projectId: `${p.projectId}-b` };
    expect(
      (await problemOf(api.createApiKey({ params: sibling, body: { agentId: 'agent-1', name: 'n' } }))).status,
    ).toBe(422);
    expect((await api.listApiKeys({ params: p })).pagination.total).toBe(0);

    const { apiKey } = (await api.createApiKey({ params: p, body: { agentId: 'agent-1', name: 'kept' } })).data;
    const change = await problemOf(
      api.updateApiKey({ params: { ...p, id: apiKey.id }, body: { agentId: 'no-such-agent' } }),
    );
    expect(change).toMatchObject({ status: 422, errors: [{ pointer: '/agentId' }] });
    expect((await api.getApiKey({ params: { ...p, id: apiKey.id } })).data).toEqual(apiKey);
    // A key that does not exist is still 404, whatever agent the change names.
    expect(
      (await problemOf(api.updateApiKey({ params: { ...p, id: 'nokey0000000' }, body: { agentId: 'no-such-agent' } })))
        .status,
    ).toBe(404);
  });

  test('when the body is not JSON or not declared as JSON, then it answers 400 or 415 and stores nothing', async () => {
    const p = aProject();
    const url = `${stack.gatewayUrl}${projectPath(p)}/api-keys`;
    expectProblem(
      await http('POST', url, {
        token: stack.adminToken,
        raw: '{"agentId":',
        headers: { 'content-type': 'application/json' },
      }),
      400,
    );
    expectProblem(
      await http('POST', url, {
        token: stack.adminToken,
        raw: 'agentId=a1&name=n',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
      415,
    );
    // A type that only starts like JSON's is not JSON.
    expectProblem(
      await http('POST', url, {
        token: stack.adminToken,
        raw: '{"agentId":"a1","name":"n"}',
        headers: { 'content-type': 'application/jsonl' },
      }),
      415,
    );
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
    const asB = api.withToken(await aTenantToken(admin, b.tenantId));
    expect(await problemOf(asB.listApiKeys({ params: a }))).toMatchObject({ status: 403, code: 'forbidden' });
    expect((await problemOf(asB.getApiKey({ params: { ...a, id: apiKey.id } }))).status).toBe(403);
    expect((await problemOf(asB.deleteApiKey({ params: { ...a, id: apiKey.id } }))).status).toBe(403);
    expect((await problemOf(asB.createApiKey({ params: a, body: { agentId: 'x', name: 'x' } }))).status).toBe(403);
    expect((await api.getApiKey({ params: { ...a, id: apiKey.id } })).data.id).toBe(apiKey.id);
    // B's own tenant works, and B never sees A's records there.
    expect((await asB.listApiKeys({ params: { tenantId: b.tenantId, projectId: a.projectId } })).data).toEqual([]);
  });

  test('when a viewer token tries to create a key, then it answers 403', async () => {
    const p = aProject();
    const viewer = api.withToken(await aTenantToken(admin, p.tenantId, 'viewer'));
    expect((await viewer.listApiKeys({ params: p })).data).toEqual([]);
    expect(await problemOf(viewer.createApiKey({ params: p, body: { agentId: 'a', name: 'n' } }))).toMatchObject({
      status: 403,
      code: 'forbidden',
    });
  });

  test('when a key is deleted or expires, then the run API refuses it at once', async () => {
    const p = aProject();
    const { key, apiKey } = await anApiKey(admin, p);
    const run = api.withToken(key);
    await run.createRunEvent({ body: { type: 'warm.cache' } });
    await api.deleteApiKey({ params: { ...p, id: apiKey.id } });
    expect((await problemOf(run.createRunEvent({ body: { type: 'after.delete' } }))).status).toBe(401);

    const expiresAt = new Date(Date.now() + 1500).toISOString();
    const soon = await anApiKey(admin, p, { expiresAt });
    const run2 = api.withToken(soon.key);
    await run2.createRunEvent({ body: { type: 'before.expiry' } });
    // Refused once the expiry has passed (and from then on): no fixed wait for the clock.
    const refused = () =>
      run2.createRunEvent({ body: { type: 'after.expiry' } }).then(
        () => false,
        (e: unknown) => e instanceof ProblemError && e.status === 401,
      );
    await eventually(refused, 'the expired key refused', 15_000);
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(expiresAt));
    expect((await problemOf(run2.createRunEvent({ body: { type: 'after.expiry' } }))).status).toBe(401);
  });

  test('when a key is created with an expiry in the past, then it answers 422', async () => {
    const p = await aProjectWithAgents(admin);
    expect(
      await problemOf(
        api.createApiKey({ params: p, body: { agentId: 'agent-1', name: 'n', expiresAt: '2001-01-01T00:00:00Z' } }),
      ),
    ).toMatchObject({
      status: 422,
      code: 'unprocessable_entity',
      errors: [{ pointer: '/expiresAt' }],
    });
  });

  test('when the playground token is asked without a session cookie, then it fails with the legacy body; with a session it is issued', async () => {
    const p = aProject();
    const noCookie = await admin.post(`/manage/tenants/${p.tenantId}/playground/token`, {
      projectId: p.projectId,
      agentId: 'a1',
    });
    expect(noCookie.status).toBe(401);
    expect(noCookie.body).toMatchObject({ error: 'unauthorized', message: expect.any(String) });
    expect(noCookie.body).toHaveProperty('details');

    const session = await admin.post('/manage/auth/session');
    expect(session.status).toBe(201);
    const cookie = session.headers.get('set-cookie')!.split(';')[0]!;
    expect(cookie).toMatch(/^platform\.session_token=/);
    const anon = client(stack.gatewayUrl);
    const token = await anon.post(
      `/manage/tenants/${p.tenantId}/playground/token`,
      { projectId: p.projectId, agentId: 'a1' },
      { cookie },
    );
    expect(token.status).toBe(200);
    expect(token.body).toMatchObject({
      appId: 'app_playground',
      apiKey: expect.any(String),
      expiresAt: expect.any(String),
    });
    // The cookie also works on management routes, and the token works on the run API.
    expect((await anon.get(`${projectPath(p)}/api-keys`, { cookie })).status).toBe(200);
    const ev = await client(stack.gatewayUrl, token.body.apiKey).post('/run/v1/events', { type: 'playground.tested' });
    expect(ev.status).toBe(201);
    expect(ev.body.data).toMatchObject({
      tenantId: p.tenantId,
      projectId: p.projectId,
      agentId: 'a1',
      serverMetadata: { authMethod: 'playground_token' },
    });
    const bad = await anon.post(
      `/manage/tenants/${p.tenantId}/playground/token`,
      { projectId: p.projectId },
      { cookie },
    );
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ error: 'bad_request' });
  });
});
