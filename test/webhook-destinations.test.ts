import { adminClient, aProject, aTenantToken, client, projectPath, testStack } from '@platform/testkit';

const stack = testStack();
const admin = adminClient(stack);
const base = (p: { tenantId: string; projectId: string }) => `${projectPath(p)}/webhook-destinations`;
const valid = { name: 'hook', url: 'https://example.com/hook', eventTypes: ['event.created'] };

describe('webhook destinations', () => {
  test('when a destination is created, then defaults apply and it can be read, listed, changed and deleted', async () => {
    const p = aProject();
    const created = await admin.post(base(p), { ...valid, id: 'dest-1', headers: { 'X-Team': 'blue' }, agentIds: ['agent-a'] });
    expect(created.status).toBe(201);
    const d = created.body.data;
    expect(d).toMatchObject({ id: 'dest-1', name: 'hook', enabled: true, eventTypes: ['event.created'], agentIds: ['agent-a'], evaluatorIds: [], headers: { 'X-Team': 'blue' }, url: valid.url, chatappChannelId: null, description: null });
    const { secret, ...stored } = d;
    expect(secret).toMatch(/^whsec_/);
    expect((await admin.get(`${base(p)}/dest-1`)).body.data).toEqual(stored);

    const disabled = await admin.patch(`${base(p)}/dest-1`, { enabled: false, agentIds: [] });
    expect(disabled.status).toBe(200);
    expect(disabled.body.data).toMatchObject({ enabled: false, agentIds: [] });
    const toChannel = await admin.patch(`${base(p)}/dest-1`, { chatappChannelId: 'C123ABC' });
    expect(toChannel.body.data).toMatchObject({ chatappChannelId: 'C123ABC', url: null });
    expect((await admin.patch(`${base(p)}/dest-1`, { enabled: true })).body.data.enabled).toBe(true);

    expect((await admin.delete(`${base(p)}/dest-1`)).status).toBe(204);
    expect((await admin.get(`${base(p)}/dest-1`)).status).toBe(404);
    expect((await admin.get(base(p))).body.pagination.total).toBe(0);
  });

  test('when the list is filtered by agentId, then only destinations scoped to that agent are returned', async () => {
    const p = aProject();
    await admin.post(base(p), { ...valid, id: 'all-agents' });
    await admin.post(base(p), { ...valid, id: 'for-a', agentIds: ['a'] });
    await admin.post(base(p), { ...valid, id: 'for-b', agentIds: ['b'] });
    const res = await admin.get(`${base(p)}?agentId=a`);
    expect(res.body.data.map((d: { id: string }) => d.id)).toEqual(['for-a']);
    expect((await admin.get(base(p))).body.pagination.total).toBe(3);
  });

  test.each([
    ['both url and chatappChannelId', { ...valid, chatappChannelId: 'C1' }],
    ['neither url nor chatappChannelId', { name: 'x', eventTypes: ['event.created'] }],
    ['no event types', { ...valid, eventTypes: [] }],
    ['an unknown event type', { ...valid, eventTypes: ['nope'] }],
    ['an empty name', { ...valid, name: '' }],
    ['a url that is not a URL', { ...valid, url: 'not a url' }],
    ['a url with another scheme', { ...valid, url: 'ftp://example.com/x' }],
    ['a reserved header name', { ...valid, headers: { 'Content-Length': '1' } }],
    ['a reserved header name in other case', { ...valid, headers: { 'transfer-encoding': 'chunked' } }],
    ['a header name that is not a token', { ...valid, headers: { 'Bad Header': 'x' } }],
    ['a header name over 128 characters', { ...valid, headers: { ['x'.repeat(129)]: 'v' } }],
    ['an empty header value', { ...valid, headers: { 'X-A': '' } }],
    ['a header value over 1000 characters', { ...valid, headers: { 'X-A': 'v'.repeat(1001) } }],
    ['a header value with a newline', { ...valid, headers: { 'X-A': 'a\r\nInjected: 1' } }],
    ['an id that is not a RID', { ...valid, id: 'a/b' }],
    ['enabled that is not a boolean', { ...valid, enabled: 'yes' }],
  ])('when the body has %s, then it answers 400 and stores nothing', async (_what, body) => {
    const p = aProject();
    const res = await admin.post(base(p), body);
    expect(res.status).toBe(400);
    expect(res.contentType).toMatch(/problem\+json/);
    expect(res.body.errors?.length).toBeGreaterThan(0);
    expect((await admin.get(base(p))).body.pagination.total).toBe(0);
  });

  test('when an update would leave both targets set or an empty eventTypes, then it answers 400 and changes nothing', async () => {
    const p = aProject();
    await admin.post(base(p), { ...valid, id: 'd' });
    expect((await admin.patch(`${base(p)}/d`, { url: 'https://a.example/x', chatappChannelId: 'C1' })).status).toBe(400);
    expect((await admin.patch(`${base(p)}/d`, { eventTypes: [] })).status).toBe(400);
    const cleared = await admin.patch(`${base(p)}/d`, { url: null });
    expect(cleared.status).toBe(422);
    expect((await admin.get(`${base(p)}/d`)).body.data).toMatchObject({ url: valid.url, eventTypes: ['event.created'] });
  });

  test('when a destination id is reused, then it answers 409', async () => {
    const p = aProject();
    expect((await admin.post(base(p), { ...valid, id: 'same' })).status).toBe(201);
    expect((await admin.post(base(p), { ...valid, id: 'same' })).status).toBe(409);
  });

  test("when another tenant's token or no credential is used, then it answers 403 or 401 and changes nothing", async () => {
    const a = aProject();
    await admin.post(base(a), { ...valid, id: 'mine' });
    const other = client(stack.gatewayUrl, await aTenantToken(admin, aProject().tenantId));
    expect((await other.get(`${base(a)}/mine`)).status).toBe(403);
    expect((await other.patch(`${base(a)}/mine`, { enabled: false })).status).toBe(403);
    expect((await other.delete(`${base(a)}/mine`)).status).toBe(403);
    expect((await client(stack.gatewayUrl).get(base(a))).status).toBe(401);
    expect((await admin.get(`${base(a)}/mine`)).body.data.enabled).toBe(true);
  });
});
