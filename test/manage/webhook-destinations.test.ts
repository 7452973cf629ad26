import { adminApi, aProject, aTenantToken } from '@platform/testkit';
import { admin, stack } from '../support/stack';
import { problemOf } from '../support/expect-problem';

const api = adminApi(stack);
const valid = { name: 'hook', url: 'https://example.com/hook', eventTypes: ['event.created' as const] };

const statusOf = async (call: Promise<unknown>) => (await problemOf(call)).status;

describe('webhook destinations', () => {
  test('when a destination is created, then defaults apply and it can be read, listed, changed and deleted', async () => {
    const p = aProject();
    const created = await api.createWebhookDestination({
      params: p,
      body: { ...valid, id: 'dest-1', headers: { 'X-Team': 'blue' }, agentIds: ['agent-a'] },
    });
    const d = created.data;
    expect(d).toMatchObject({
      id: 'dest-1',
      name: 'hook',
      enabled: true,
      eventTypes: ['event.created'],
      agentIds: ['agent-a'],
      evaluatorIds: [],
      headers: { 'X-Team': 'blue' },
      url: valid.url,
      chatappChannelId: null,
      description: null,
    });
    const at = { params: { ...p, id: 'dest-1' } };
    const { secret, ...stored } = d;
    expect(secret).toMatch(/^whsec_/);
    expect((await api.getWebhookDestination(at)).data).toEqual(stored);

    const disabled = await api.updateWebhookDestination({ ...at, body: { enabled: false, agentIds: [] } });
    expect(disabled.data).toMatchObject({ enabled: false, agentIds: [] });
    const toChannel = await api.updateWebhookDestination({ ...at, body: { chatappChannelId: 'C123ABC' } });
    expect(toChannel.data).toMatchObject({ chatappChannelId: 'C123ABC', url: null });
    expect((await api.updateWebhookDestination({ ...at, body: { enabled: true } })).data.enabled).toBe(true);

    await api.deleteWebhookDestination(at);
    expect(await statusOf(api.getWebhookDestination(at))).toBe(404);
    expect((await api.listWebhookDestinations({ params: p })).pagination.total).toBe(0);
  });

  test('when header names start with $ or hold dots (valid tokens), then the destination is stored and read back with them', async () => {
    const p = aProject();
    const headers = { $Team: 'blue', 'X.Trace': 'on' };
    const created = await api.createWebhookDestination({ params: p, body: { ...valid, id: 'dest-keys', headers } });
    expect(created.data.headers).toEqual(headers);
    const at = { params: { ...p, id: 'dest-keys' } };
    expect((await api.getWebhookDestination(at)).data.headers).toEqual(headers);
    const changed = { 'a.b.c': '1', $x: '2' };
    expect((await api.updateWebhookDestination({ ...at, body: { headers: changed } })).data.headers).toEqual(changed);
    expect((await api.listWebhookDestinations({ params: p })).data.map((d) => d.headers)).toEqual([changed]);
  });

  test('when the list is filtered by agentId, then only destinations scoped to that agent are returned', async () => {
    const p = aProject();
    await api.createWebhookDestination({ params: p, body: { ...valid, id: 'all-agents' } });
    await api.createWebhookDestination({ params: p, body: { ...valid, id: 'for-a', agentIds: ['a'] } });
    await api.createWebhookDestination({ params: p, body: { ...valid, id: 'for-b', agentIds: ['b'] } });
    const res = await api.listWebhookDestinations({ params: p, query: { agentId: 'a' } });
    expect(res.data.map((d) => d.id)).toEqual(['for-a']);
    expect((await api.listAll(api.ops.listWebhookDestinations, { params: p })).map((d) => d.id).sort()).toEqual([
      'all-agents',
      'for-a',
      'for-b',
    ]);
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
    const problem = await problemOf(api.createWebhookDestination({ params: p, body: body as never }));
    expect(problem.status).toBe(400);
    expect(problem.headers.get('content-type')).toMatch(/problem\+json/);
    expect(problem.errors.length).toBeGreaterThan(0);
    expect((await api.listWebhookDestinations({ params: p })).pagination.total).toBe(0);
  });

  test('when an update would leave both targets set or an empty eventTypes, then it answers 400 and changes nothing', async () => {
    const p = aProject();
    const at = { params: { ...p, id: 'd' } };
    await api.createWebhookDestination({ params: p, body: { ...valid, id: 'd' } });
    expect(
      await statusOf(
        api.updateWebhookDestination({ ...at, body: { url: 'https://a.example/x', chatappChannelId: 'C1' } }),
      ),
    ).toBe(400);
    expect(await statusOf(api.updateWebhookDestination({ ...at, body: { eventTypes: [] } }))).toBe(400);
    expect(await statusOf(api.updateWebhookDestination({ ...at, body: { url: null } }))).toBe(422);
    expect((await api.getWebhookDestination(at)).data).toMatchObject({ url: valid.url, eventTypes: ['event.created'] });
  });

  test('when a destination id is reused, then it answers 409', async () => {
    const p = aProject();
    await api.createWebhookDestination({ params: p, body: { ...valid, id: 'same' } });
    expect(await problemOf(api.createWebhookDestination({ params: p, body: { ...valid, id: 'same' } }))).toMatchObject({
      status: 409,
      code: 'conflict',
    });
  });

  test("when another tenant's token or no credential is used, then it answers 403 or 401 and changes nothing", async () => {
    const a = aProject();
    const at = { params: { ...a, id: 'mine' } };
    await api.createWebhookDestination({ params: a, body: { ...valid, id: 'mine' } });
    const other = api.withToken(await aTenantToken(admin, aProject().tenantId));
    expect(await statusOf(other.getWebhookDestination(at))).toBe(403);
    expect(await statusOf(other.updateWebhookDestination({ ...at, body: { enabled: false } }))).toBe(403);
    expect(await statusOf(other.deleteWebhookDestination(at))).toBe(403);
    expect(await statusOf(api.withToken(undefined).listWebhookDestinations({ params: a }))).toBe(401);
    expect((await api.getWebhookDestination(at)).data.enabled).toBe(true);
  });
});
