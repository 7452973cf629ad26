import http from 'node:http';
import { anAnalyticsKey, anApiKey, aProject, client, projectPath, uniqueId } from '@platform/testkit';
import { admin, stack } from '../support/stack';

const TWO_MB = 2 * 1024 * 1024;

/** A key for a fresh project, and a client of the analytics base URL that sends it. */
async function anIngestClient(overrides: Record<string, unknown> = {}) {
  const p = aProject();
  const { key, analyticsKey } = await anAnalyticsKey(admin, p, overrides);
  return { p, key, analyticsKey, ingest: client(stack.analyticsUrl, key) };
}

/** A JSON body of exactly `bytes` bytes (UTF-8), padded inside `properties`. */
function bodyOfSize(bytes: number, id: string): string {
  const make = (pad: string) =>
    JSON.stringify({ id, entityType: 'message', messageId: 'm-1', type: 'padded', properties: { pad } });
  const base = Buffer.byteLength(make(''));
  const body = make('x'.repeat(bytes - base));
  expect(Buffer.byteLength(body)).toBe(bytes);
  return body;
}

/** Sends raw bytes with node:http so headers (content-length, chunking) are exactly ours; resolves on the response. */
function rawPost(
  url: string,
  opts: { headers: Record<string, string>; chunks?: Buffer[]; end?: boolean },
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: opts.headers });
    let answered = false;
    req.on('response', (res) => {
      answered = true;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        req.destroy();
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? JSON.parse(text) : undefined });
      });
    });
    // Once the server has answered and closed, further writes may fail; only an error before the answer counts.
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    req.flushHeaders();
    for (const c of opts.chunks ?? []) req.write(c);
    if (opts.end) req.end();
  });
}

describe('analytics ingest: the three shapes', () => {
  test('when a message event carries every optional field, then it answers 201 and echoes the stored event', async () => {
    const { p, ingest } = await anIngestClient({ integrationId: 'site-a' });
    const body = {
      id: uniqueId('evt'),
      entityType: 'message',
      messageId: 'msg-1',
      type: 'message.copied',
      createdAt: '2026-03-01T10:15:00+02:00',
      projectId: p.projectId,
      integrationId: 'site-a',
      properties: { 'page.url': 'https://example.com/a?b=1', $price: 3, nested: { 'a.b': [1, 'two', null] } },
      userProperties: {
        id: 'u-1',
        identificationType: 'COOKIED',
        userId: 42,
        supportAgentName: 'Ana',
        userType: 'customer',
        plan: 'pro',
      },
    };
    const res = await ingest.post('/events', body);
    expect(res.status).toBe(201);
    expect(res.contentType).toMatch(/application\/json/);
    expect(res.body).toEqual({
      id: body.id,
      entityType: 'message',
      messageId: 'msg-1',
      type: 'message.copied',
      createdAt: '2026-03-01T08:15:00.000Z',
      projectId: p.projectId,
      integrationId: 'site-a',
      properties: body.properties,
      userProperties: body.userProperties,
    });
  });

  test('when a conversation event is sent with only its required fields, then the server fills id, createdAt and the key scope', async () => {
    const { p, ingest } = await anIngestClient({ integrationId: 'widget-7' });
    const before = Date.now();
    const res = await ingest.post('/events', {
      entityType: 'conversation',
      conversationId: 'conv-9',
      type: 'conversation.opened',
    });
    const after = Date.now();
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      entityType: 'conversation',
      conversationId: 'conv-9',
      type: 'conversation.opened',
      projectId: p.projectId,
      integrationId: 'widget-7',
      properties: null,
      userProperties: null,
    });
    expect(res.body.id).toEqual(expect.any(String));
    expect(res.body.id.length).toBeGreaterThan(0);
    const createdAt = Date.parse(res.body.createdAt);
    expect(createdAt).toBeGreaterThanOrEqual(before - 1000);
    expect(createdAt).toBeLessThanOrEqual(after + 1000);
    expect(res.body).not.toHaveProperty('messageId');
    expect(res.body).not.toHaveProperty('searchQuery');
  });

  test('when a search event sends null for every nullable field, then it is stored with nulls and the current time', async () => {
    const { p, ingest } = await anIngestClient();
    const res = await ingest.post('/events', {
      entityType: 'search',
      searchQuery: 'how do I reset my password?',
      type: 'search.performed',
      createdAt: null,
      projectId: null,
      integrationId: null,
      properties: null,
      userProperties: null,
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      entityType: 'search',
      searchQuery: 'how do I reset my password?',
      type: 'search.performed',
      projectId: p.projectId,
      integrationId: 'web-1',
      properties: null,
      userProperties: null,
    });
    expect(Math.abs(Date.parse(res.body.createdAt) - Date.now())).toBeLessThan(60_000);
  });
});

describe('analytics ingest: bad input changes nothing', () => {
  test.each([
    ['message', 'messageId'],
    ['conversation', 'conversationId'],
    ['search', 'searchQuery'],
  ])(
    'when a %s event lacks %s, then it answers 400 naming the field and stores nothing',
    async (entityType, anchor) => {
      const { ingest } = await anIngestClient();
      const id = uniqueId('evt');
      const res = await ingest.post('/events', { id, entityType, type: 'x.happened' });
      expect(res.status).toBe(400);
      expect(res.contentType).toMatch(/application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 400, code: 'bad_request', title: 'Bad Request' });
      expect(res.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ pointer: `/${anchor}` })]));
      // The id is still unused: a valid event with it is new.
      const valid = await ingest.post('/events', { id, entityType, [anchor]: 'a-1', type: 'x.happened' });
      expect(valid.status).toBe(201);
    },
  );

  test('when type is missing, then it answers 400 pointing at /type', async () => {
    const { ingest } = await anIngestClient();
    const res = await ingest.post('/events', { entityType: 'message', messageId: 'm-1' });
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([expect.objectContaining({ pointer: '/type' })]);
  });

  test('when entityType is missing, then it answers 400; when it names an unknown entity, then 422', async () => {
    const { ingest } = await anIngestClient();
    const missing = await ingest.post('/events', { type: 't', messageId: 'm-1' });
    expect(missing.status).toBe(400);
    expect(missing.body.errors).toEqual([expect.objectContaining({ pointer: '/entityType' })]);
    const unknown = await ingest.post('/events', { type: 't', entityType: 'pageview', messageId: 'm-1' });
    expect(unknown.status).toBe(422);
    expect(unknown.contentType).toMatch(/application\/problem\+json/);
    expect(unknown.body).toMatchObject({ status: 422, code: 'unprocessable_entity' });
    expect(unknown.body.errors).toEqual([expect.objectContaining({ pointer: '/entityType' })]);
    expect(unknown.body.detail).toMatch(/message.*conversation.*search/);
  });

  test('when the body is not valid JSON, then it answers 400', async () => {
    const { key } = await anIngestClient();
    const res = await client(stack.analyticsUrl).post('/events', undefined, {
      raw: '{"entityType": "message", ',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'bad_request', detail: 'The request body is not valid JSON' });
  });

  test('when the content type is not JSON, then it answers 415', async () => {
    const { key } = await anIngestClient();
    const res = await client(stack.analyticsUrl).post('/events', undefined, {
      raw: 'entityType=message&messageId=m&type=t',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Bearer ${key}` },
    });
    expect(res.status).toBe(415);
    expect(res.body).toMatchObject({ status: 415, code: 'unsupported_media_type' });
  });

  test('when createdAt has no timezone or a field is unknown, then it answers 400', async () => {
    const { ingest } = await anIngestClient();
    const noZone = await ingest.post('/events', {
      entityType: 'message',
      messageId: 'm',
      type: 't',
      createdAt: '2026-03-01T10:15:00',
    });
    expect(noZone.status).toBe(400);
    expect(noZone.body.errors).toEqual([expect.objectContaining({ pointer: '/createdAt' })]);
    const extra = await ingest.post('/events', { entityType: 'message', messageId: 'm', type: 't', colour: 'red' });
    expect(extra.status).toBe(400);
  });
});

describe('analytics ingest: body size limit of 2 MB', () => {
  test('when the body is 2 MB minus one byte, then it is accepted and stored whole', async () => {
    const { ingest, key } = await anIngestClient();
    const id = uniqueId('big');
    const body = bodyOfSize(TWO_MB - 1, id);
    const res = await client(stack.analyticsUrl).post('/events', undefined, {
      raw: body,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    });
    expect(res.status).toBe(201);
    expect(res.body.properties.pad.length).toBe(JSON.parse(body).properties.pad.length);
    const replay = await ingest.post('/events', { id, entityType: 'message', messageId: 'm-1', type: 'padded' });
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual(res.body);
  });

  test('when the body is 2 MB plus one byte, then it answers 413 with a problem and stores nothing', async () => {
    const { ingest, key } = await anIngestClient();
    const id = uniqueId('big');
    const res = await client(stack.analyticsUrl).post('/events', undefined, {
      raw: bodyOfSize(TWO_MB + 1, id),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    });
    expect(res.status).toBe(413);
    expect(res.contentType).toMatch(/application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 413, code: 'payload_too_large', title: 'Payload Too Large' });
    expect(res.body.detail).toContain(String(TWO_MB));
    const fresh = await ingest.post('/events', { id, entityType: 'message', messageId: 'm-1', type: 'padded' });
    expect(fresh.status).toBe(201);
  });

  test('when Content-Length declares more than 2 MB, then it answers 413 before any of the body is sent', async () => {
    const res = await rawPost(`${stack.analyticsUrl}/events`, {
      headers: { 'content-type': 'application/json', 'content-length': String(TWO_MB + 1) },
    });
    expect(res.status).toBe(413);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(res.body).toMatchObject({ status: 413, code: 'payload_too_large' });
  });

  test('when a chunked body passes 2 MB, then it answers 413 without waiting for the rest of the body', async () => {
    const { key } = await anIngestClient();
    const start = Buffer.from('{"entityType":"message","messageId":"m","type":"t","properties":{"pad":"');
    // More than the limit, and the request is never ended: only a server that stops reading can answer.
    const res = await rawPost(`${stack.analyticsUrl}/events`, {
      headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked', authorization: `Bearer ${key}` },
      chunks: [start, Buffer.alloc(TWO_MB, 'x')],
    });
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ status: 413, code: 'payload_too_large' });
  });
});

describe('analytics ingest: authentication', () => {
  test('when no credential is sent, then it answers 401 with a problem and a Bearer challenge', async () => {
    const res = await client(stack.analyticsUrl).post('/events', { entityType: 'message', messageId: 'm', type: 't' });
    expect(res.status).toBe(401);
    expect(res.contentType).toMatch(/application\/problem\+json/);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect(res.body).toMatchObject({ status: 401, code: 'unauthorized' });
  });

  test('when the key is malformed, forged, a run-API key or the admin token, then it answers 401', async () => {
    const { key } = await anIngestClient();
    const p = aProject();
    const { key: runKey } = await anApiKey(admin, p);
    const forged = key.slice(0, key.indexOf('.') + 1) + 'A'.repeat(43);
    for (const credential of ['not-a-key', forged, runKey, stack.adminToken]) {
      const res = await client(stack.analyticsUrl, credential).post('/events', {
        entityType: 'message',
        messageId: 'm',
        type: 't',
      });
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('unauthorized');
    }
  });

  test('when a key is revoked, then it stops working at once, even right after a successful use', async () => {
    const { p, ingest, analyticsKey } = await anIngestClient();
    const ok = await ingest.post('/events', { entityType: 'message', messageId: 'm', type: 't' });
    expect(ok.status).toBe(201);
    const del = await admin.delete(`${projectPath(p)}/analytics-keys/${analyticsKey.id}`);
    expect(del.status).toBe(204);
    const after = await ingest.post('/events', { entityType: 'message', messageId: 'm', type: 't' });
    expect(after.status).toBe(401);
  });

  test("when the body names another project or integration than the key's, then it answers 403 and stores nothing", async () => {
    const { ingest } = await anIngestClient({ integrationId: 'site-a' });
    const id = uniqueId('evt');
    const otherProject = await ingest.post('/events', {
      id,
      entityType: 'message',
      messageId: 'm',
      type: 't',
      projectId: 'someone-else',
    });
    expect(otherProject.status).toBe(403);
    expect(otherProject.body).toMatchObject({ status: 403, code: 'forbidden' });
    expect(otherProject.body.errors).toEqual([expect.objectContaining({ pointer: '/projectId' })]);
    const otherIntegration = await ingest.post('/events', {
      id,
      entityType: 'message',
      messageId: 'm',
      type: 't',
      integrationId: 'site-b',
    });
    expect(otherIntegration.status).toBe(403);
    expect(otherIntegration.body.errors).toEqual([expect.objectContaining({ pointer: '/integrationId' })]);
    const valid = await ingest.post('/events', { id, entityType: 'message', messageId: 'm', type: 't' });
    expect(valid.status).toBe(201);
  });
});

describe('analytics ingest: idempotent retries', () => {
  test('when the same id is sent again, then it answers 200 with the stored row and changes nothing', async () => {
    const { ingest } = await anIngestClient();
    const id = uniqueId('evt');
    const first = await ingest.post('/events', {
      id,
      entityType: 'message',
      messageId: 'm-1',
      type: 'first',
      properties: { n: 1 },
    });
    expect(first.status).toBe(201);
    const retry = await ingest.post('/events', {
      id,
      entityType: 'search',
      searchQuery: 'other',
      type: 'second',
      properties: { n: 2 },
    });
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual(first.body);
  });

  test('when retries of one id race, then exactly one stores it and every answer is the same row', async () => {
    const { ingest } = await anIngestClient();
    const id = uniqueId('evt');
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        ingest.post('/events', { id, entityType: 'conversation', conversationId: 'c-1', type: `attempt.${i}` }),
      ),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 200)).toHaveLength(7);
    const stored = results.find((r) => r.status === 201)!.body;
    for (const r of results) expect(r.body).toEqual(stored);
  });

  test('when new events, a replay and two copies of one id arrive in one burst, then each id is stored once and every answer tells which', async () => {
    const { p, ingest } = await anIngestClient();
    const at = '2026-03-01T10:00:00Z';
    const replayed = await ingest.post('/events', {
      id: uniqueId('evt'),
      entityType: 'message',
      messageId: 'm-0',
      type: 'burst',
      createdAt: at,
    });
    expect(replayed.status).toBe(201);
    const twin = uniqueId('evt');
    const bodies = [
      ...Array.from({ length: 40 }, (_, i) => ({
        id: uniqueId('evt'),
        entityType: 'message',
        messageId: `m-${i}`,
        type: 'burst',
        createdAt: at,
      })),
      { id: replayed.body.id, entityType: 'search', searchQuery: 'other', type: 'changed', createdAt: at },
      { id: twin, entityType: 'conversation', conversationId: 'c-1', type: 'burst', createdAt: at },
      { id: twin, entityType: 'conversation', conversationId: 'c-2', type: 'burst', createdAt: at },
    ];
    const results = await Promise.all(bodies.map((b) => ingest.post('/events', b)));
    expect(results.slice(0, 40).map((r) => r.status)).toEqual(Array(40).fill(201));
    for (const [i, r] of results.slice(0, 40).entries())
      expect(r.body).toMatchObject({ id: bodies[i]!.id, messageId: `m-${i}`, projectId: p.projectId });
    expect(results[40]).toMatchObject({ status: 200, body: replayed.body });
    expect(
      results
        .slice(41)
        .map((r) => r.status)
        .sort(),
    ).toEqual([200, 201]);
    expect(results[41]!.body).toEqual(results[42]!.body);
    const counts = await admin.get(
      `${projectPath(p)}/analytics/counts?from=2026-03-01T10:00:00Z&to=2026-03-01T11:00:00Z&bucket=hour`,
    );
    expect(counts.body.data.byType).toEqual([{ type: 'burst', total: 42, counts: [42] }]);
  });

  test('when another project uses the same id, then it is a different event', async () => {
    const a = await anIngestClient();
    const b = await anIngestClient();
    const id = uniqueId('evt');
    expect((await a.ingest.post('/events', { id, entityType: 'message', messageId: 'm', type: 't' })).status).toBe(201);
    const other = await b.ingest.post('/events', { id, entityType: 'message', messageId: 'm', type: 't' });
    expect(other.status).toBe(201);
    expect(other.body.projectId).toBe(b.p.projectId);
  });
});

describe('analytics ingest: its own base URL', () => {
  test('when /events is called on the main API, then it is not found there; management is not served on the analytics URL', async () => {
    const { key } = await anIngestClient();
    const onMain = await client(stack.gatewayUrl, key).post('/events', {
      entityType: 'message',
      messageId: 'm',
      type: 't',
    });
    expect(onMain.status).toBe(404);
    const p = aProject();
    const onAnalytics = await client(stack.analyticsUrl, stack.adminToken).get(`${projectPath(p)}/analytics-keys`);
    expect(onAnalytics.status).toBe(404);
    expect(onAnalytics.body).toMatchObject({ code: 'not_found' });
  });

  test('when a browser asks for a cross-origin preflight, then any origin may POST with a bearer key', async () => {
    const res = await fetch(`${stack.analyticsUrl}/events`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://shop.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type',
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-headers')).toMatch(/authorization/);
    expect(res.headers.get('access-control-allow-methods')).toMatch(/POST/);
  });
});

describe('analytics ingest: batches (POST /events/batch)', () => {
  const at = '2026-03-02T10:00:00Z';
  const countsOf = async (p: ReturnType<typeof aProject>) =>
    (
      await admin.get(
        `${projectPath(p)}/analytics/counts?from=2026-03-02T10:00:00Z&to=2026-03-02T11:00:00Z&bucket=hour`,
      )
    ).body.data.byType;

  test('when a batch holds new events, a replay and two copies of one id, then each is stored once and the answer says which, in order', async () => {
    const { p, ingest } = await anIngestClient();
    const earlier = await ingest.post('/events', {
      id: uniqueId('evt'),
      entityType: 'message',
      messageId: 'm-0',
      type: 'batched',
      createdAt: at,
    });
    expect(earlier.status).toBe(201);
    const twin = uniqueId('evt');
    const events = [
      ...Array.from({ length: 100 }, (_, i) => ({
        id: uniqueId('evt'),
        entityType: 'message',
        messageId: `m-${i}`,
        type: 'batched',
        createdAt: at,
      })),
      { id: earlier.body.id, entityType: 'search', searchQuery: 'changed', type: 'changed', createdAt: at },
      { id: twin, entityType: 'conversation', conversationId: 'c-1', type: 'batched', createdAt: at },
      { id: twin, entityType: 'conversation', conversationId: 'c-1', type: 'batched', createdAt: at },
    ];
    const res = await ingest.post('/events/batch', { events });
    expect(res.status).toBe(200);
    const items = res.body.data as Array<{
      status: number;
      data: { id: string; messageId?: string; projectId: string };
    }>;
    expect(items).toHaveLength(103);
    expect(items.slice(0, 100).map((x) => x.status)).toEqual(Array(100).fill(201));
    for (const [i, x] of items.slice(0, 100).entries())
      expect(x.data).toMatchObject({ id: events[i]!.id, messageId: `m-${i}`, projectId: p.projectId });
    expect(items[100]).toEqual({ status: 200, data: earlier.body });
    expect([items[101]!.status, items[102]!.status].sort()).toEqual([200, 201]);
    expect(items[101]!.data).toEqual(items[102]!.data);
    expect(await countsOf(p)).toEqual([{ type: 'batched', total: 102, counts: [102] }]);

    // the same batch again stores nothing and answers every event with its stored row
    const again = await ingest.post('/events/batch', { events });
    expect(again.status).toBe(200);
    expect(again.body.data.map((x: { status: number }) => x.status)).toEqual(Array(103).fill(200));
    expect(again.body.data.slice(0, 100)).toEqual(items.slice(0, 100).map((x) => ({ status: 200, data: x.data })));
    expect(await countsOf(p)).toEqual([{ type: 'batched', total: 102, counts: [102] }]);
  });

  test('when one event of a batch is invalid or names another project, then nothing of it is stored and the problem points at it', async () => {
    const { p, ingest } = await anIngestClient();
    const good = { entityType: 'message', messageId: 'm', type: 'batched', createdAt: at };
    const invalid = await ingest.post('/events/batch', {
      events: [good, { entityType: 'message', messageId: 'm', createdAt: at }, good],
    });
    expect(invalid.status).toBe(400);
    expect(invalid.contentType).toMatch(/application\/problem\+json/);
    expect(invalid.body.errors).toEqual(
      expect.arrayContaining([expect.objectContaining({ pointer: '/events/1/type' })]),
    );
    const foreign = await ingest.post('/events/batch', { events: [good, { ...good, projectId: 'someone-else' }] });
    expect(foreign.status).toBe(403);
    expect(foreign.body.errors).toEqual([expect.objectContaining({ pointer: '/events/1/projectId' })]);
    const empty = await ingest.post('/events/batch', { events: [] });
    expect(empty.status).toBe(400);
    const tooMany = await ingest.post('/events/batch', { events: Array.from({ length: 1001 }, () => good) });
    expect(tooMany.status).toBe(400);
    expect(await countsOf(p)).toEqual([]);
  });
});
