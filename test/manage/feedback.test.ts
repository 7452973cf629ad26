import { AckPolicy, DeliverPolicy } from 'nats';
import {
  eventSubject,
  feedbackCreated,
  parseEventData,
  PLATFORM_EVENTS_STREAM,
  type EventEnvelope,
} from '@platform/contracts';
import { aProject, aTenantToken, client, eventually, projectPath } from '@platform/testkit';
import { admin, stack } from '../support/stack';
import { adminNats } from '../support/connections';
import { expectProblem } from '../support/expect-problem';

const nats = adminNats(stack);

async function feedbackCount(p: { tenantId: string; projectId: string }) {
  return (await admin.get(`${projectPath(p)}/feedback`)).body.pagination.total as number;
}

/** Every `feedback.created` event of a project in the stream, read with a fresh ephemeral consumer. */
async function feedbackEvents(p: { tenantId: string; projectId: string }, expected: number): Promise<EventEnvelope[]> {
  const subject = eventSubject(feedbackCreated, p.tenantId, p.projectId);
  const jsm = await nats.nc.jetstreamManager();
  return eventually(async () => {
    const info = await jsm.consumers.add(PLATFORM_EVENTS_STREAM, {
      filter_subject: subject,
      deliver_policy: DeliverPolicy.All,
      ack_policy: AckPolicy.None,
      inactive_threshold: 30_000_000_000,
    });
    const consumer = await nats.nc.jetstream().consumers.get(PLATFORM_EVENTS_STREAM, info.name);
    const out: EventEnvelope[] = [];
    const batch = await consumer.fetch({ max_messages: expected + 5, expires: 1000 });
    for await (const m of batch) {
      expect(m.subject).toBe(subject);
      out.push(m.json<EventEnvelope>());
    }
    await jsm.consumers.delete(PLATFORM_EVENTS_STREAM, info.name).catch(() => undefined);
    return out.length >= expected ? out : undefined;
  }, `${expected} feedback.created event(s) on ${subject}`);
}

describe('feedback', () => {
  test('when feedback is created, then it can be read, listed, changed and deleted', async () => {
    const p = aProject();
    const P = projectPath(p);
    const created = await admin.post(`${P}/feedback`, {
      id: 'fb-1',
      conversationId: 'conv-1',
      messageId: 'msg-1',
      type: 'negative',
      details: 'wrong answer',
      agentId: 'agent-1',
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      data: {
        id: 'fb-1',
        conversationId: 'conv-1',
        messageId: 'msg-1',
        agentId: 'agent-1',
        type: 'negative',
        details: 'wrong answer',
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      },
    });
    expect((await admin.get(`${P}/feedback/fb-1`)).body).toEqual(created.body);
    expect((await admin.get(`${P}/feedback`)).body).toEqual({
      data: [created.body.data],
      pagination: { page: 1, limit: 10, total: 1, pages: 1, completedCount: 1 },
    });

    const changed = await admin.patch(`${P}/feedback/fb-1`, { type: 'positive', details: null });
    expect(changed.status).toBe(200);
    expect(changed.body.data).toMatchObject({
      id: 'fb-1',
      type: 'positive',
      details: null,
      conversationId: 'conv-1',
      createdAt: created.body.data.createdAt,
    });
    expect((await admin.get(`${P}/feedback/fb-1`)).body.data).toEqual(changed.body.data);

    const deleted = await admin.delete(`${P}/feedback/fb-1`);
    expect(deleted.status).toBe(204);
    expect(deleted.body).toBeUndefined();
    expectProblem(await admin.get(`${P}/feedback/fb-1`), 404);
    expectProblem(await admin.delete(`${P}/feedback/fb-1`), 404);
    expectProblem(await admin.patch(`${P}/feedback/fb-1`, { type: 'negative' }), 404);
  });

  test('when feedback is changed or deleted right after it is created, then the change is kept and its event still arrives', async () => {
    const p = aProject();
    const P = projectPath(p);
    const ids = Array.from({ length: 20 }, (_, i) => `r${String(i).padStart(2, '0')}`);
    await Promise.all(
      ids.map(async (id) => {
        expect((await admin.post(`${P}/feedback`, { id, conversationId: 'c', type: 'positive' })).status).toBe(201);
        if (id === 'r19') expect((await admin.delete(`${P}/feedback/${id}`)).status).toBe(204);
        else
          expect(
            (await admin.patch(`${P}/feedback/${id}`, { type: 'negative', details: `changed ${id}` })).status,
          ).toBe(200);
      }),
    );
    for (const id of ids.slice(0, 19))
      expect((await admin.get(`${P}/feedback/${id}`)).body.data).toMatchObject({
        type: 'negative',
        details: `changed ${id}`,
      });
    expectProblem(await admin.get(`${P}/feedback/r19`), 404);
    const events = await feedbackEvents(p, 20);
    expect(events.map((e) => (e.data as { feedback: { id: string } }).feedback.id).sort()).toEqual(ids);
  });

  test('when feedback is created without an id, then one is generated and the optional fields are null', async () => {
    const p = aProject();
    const res = await admin.post(`${projectPath(p)}/feedback`, { conversationId: 'conv-1', type: 'positive' });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      id: expect.stringMatching(/^[A-Za-z0-9]{16}$/),
      messageId: null,
      agentId: null,
      details: null,
    });
  });

  test('when feedback is created, then a feedback.created event carrying it reaches JetStream', async () => {
    const p = aProject();
    const created = await admin.post(`${projectPath(p)}/feedback`, {
      id: 'fb-evt',
      conversationId: 'conv-1',
      type: 'positive',
    });
    const [event] = await feedbackEvents(p, 1);
    expect(event).toMatchObject({ type: 'feedback.created', version: 1, tenantId: p.tenantId, projectId: p.projectId });
    expect(parseEventData(feedbackCreated, event!.data)).toEqual({ feedback: created.body.data });
  });

  test('when feedback with an id already used in the project is created, then it answers 409 and the first is kept', async () => {
    const p = aProject();
    const first = await admin.post(`${projectPath(p)}/feedback`, {
      id: 'fb-1',
      conversationId: 'c1',
      type: 'positive',
    });
    expectProblem(
      await admin.post(`${projectPath(p)}/feedback`, { id: 'fb-1', conversationId: 'c2', type: 'negative' }),
      409,
    );
    expect((await admin.get(`${projectPath(p)}/feedback/fb-1`)).body).toEqual(first.body);
  });

  test.each([
    ['conversationId is missing', { conversationId: undefined }, '/conversationId'],
    ['conversationId is not a RID', { conversationId: 'conv 1' }, '/conversationId'],
    ['conversationId is longer than 255', { conversationId: 'c'.repeat(256) }, '/conversationId'],
    ['type is missing', { type: undefined }, '/type'],
    ['type is neither positive nor negative', { type: 'neutral' }, '/type'],
    ['the id is not a RID', { id: 'fb/1' }, '/id'],
    ['messageId is not a RID', { messageId: 'm#1' }, '/messageId'],
    ['details are longer than 10000', { details: 'd'.repeat(10001) }, '/details'],
    ['details contain a NUL character', { details: 'a\u0000b' }, '/details'],
    ['a field is unknown', { rating: 5 }, undefined],
  ])('when %s, then create answers 400 and stores nothing', async (_what, overrides, pointer) => {
    const p = aProject();
    const body = JSON.parse(JSON.stringify({ conversationId: 'conv-1', type: 'positive', ...overrides }));
    expectProblem(await admin.post(`${projectPath(p)}/feedback`, body), 400, pointer);
    expect(await feedbackCount(p)).toBe(0);
  });

  test.each([
    ['type is not allowed', { type: 'meh' }, '/type'],
    ['conversationId cannot be changed', { conversationId: 'c2' }, undefined],
    ['details are too long', { details: 'd'.repeat(10001) }, '/details'],
  ])('when an update says %s, then it answers 400 and changes nothing', async (_what, body, pointer) => {
    const p = aProject();
    const created = await admin.post(`${projectPath(p)}/feedback`, {
      id: 'fb-1',
      conversationId: 'c1',
      type: 'positive',
      details: 'ok',
    });
    expectProblem(await admin.patch(`${projectPath(p)}/feedback/fb-1`, body), 400, pointer);
    expect((await admin.get(`${projectPath(p)}/feedback/fb-1`)).body).toEqual(created.body);
  });

  test('when feedback is listed with filters, then each filter narrows the list and the date range is inclusive', async () => {
    const p = aProject();
    const P = projectPath(p);
    const a = (
      await admin.post(`${P}/feedback`, {
        id: 'a',
        conversationId: 'c1',
        messageId: 'm1',
        type: 'positive',
        agentId: 'agent-1',
      })
    ).body.data;
    // Wait until the clock has moved on, so the two records have different creation times.
    await eventually(() => Date.now() > Date.parse(a.createdAt) + 2, 'the clock to move');
    const b = (
      await admin.post(`${P}/feedback`, {
        id: 'b',
        conversationId: 'c2',
        messageId: 'm2',
        type: 'negative',
        agentId: 'agent-2',
      })
    ).body.data;
    const ids = async (query: string) => {
      const res = await admin.get(`${P}/feedback?${query}`);
      expect(res.status).toBe(200);
      return res.body.data.map((f: { id: string }) => f.id);
    };
    expect(await ids('')).toEqual(['b', 'a']);
    expect(await ids('conversationId=c1')).toEqual(['a']);
    expect(await ids('messageId=m2')).toEqual(['b']);
    expect(await ids('agentId=agent-1')).toEqual(['a']);
    expect(await ids('type=negative')).toEqual(['b']);
    expect(await ids('type=positive&conversationId=c2')).toEqual([]);
    expect(
      await ids(`startDate=${encodeURIComponent(a.createdAt)}&endDate=${encodeURIComponent(a.createdAt)}`),
    ).toEqual(['a']);
    expect(await ids(`startDate=${encodeURIComponent(b.createdAt)}`)).toEqual(['b']);
    expect(await ids(`endDate=${encodeURIComponent(b.createdAt)}`)).toEqual(['b', 'a']);
    // The same instant written with another offset.
    const bPlusTwo = new Date(Date.parse(b.createdAt) + 2 * 3600_000).toISOString().replace('Z', '+02:00');
    expect(await ids(`startDate=${encodeURIComponent(bPlusTwo)}`)).toEqual(['b']);
    expect(await ids(`endDate=${encodeURIComponent(new Date(Date.parse(a.createdAt) - 1).toISOString())}`)).toEqual([]);
  });

  test.each([
    ['startDate is not a date-time', 'startDate=yesterday', '#query/startDate'],
    ['endDate has no offset', 'endDate=2026-01-01T00:00:00', '#query/endDate'],
    ['startDate is after endDate', 'startDate=2026-01-02T00:00:00Z&endDate=2026-01-01T00:00:00Z', '#query/startDate'],
    ['type is unknown', 'type=neutral', '#query/type'],
    ['conversationId is not a RID', 'conversationId=a%20b', '#query/conversationId'],
    ['limit is above 100', 'limit=101', '#query/limit'],
    ['limit is 0', 'limit=0', '#query/limit'],
    ['page is 0', 'page=0', '#query/page'],
  ])('when the list query says %s, then it answers 400', async (_what, query, pointer) => {
    expectProblem(await admin.get(`${projectPath(aProject())}/feedback?${query}`), 400, pointer);
  });

  test('when feedback is listed page by page, then pagination counts are right', async () => {
    const p = aProject();
    const items = Array.from({ length: 5 }, (_, i) => ({ id: `f${i}`, conversationId: 'c', type: 'positive' }));
    expect((await admin.post(`${projectPath(p)}/feedback/bulk`, items)).status).toBe(201);
    const page = await admin.get(`${projectPath(p)}/feedback?page=3&limit=2`);
    expect(page.body.data).toHaveLength(1);
    expect(page.body.pagination).toEqual({ page: 3, limit: 2, total: 5, pages: 3, completedCount: 5 });
  });
});

describe('bulk feedback', () => {
  test('when some items are invalid, then the valid ones are stored (201) and the others reported by index, with one event per stored item', async () => {
    const p = aProject();
    const P = projectPath(p);
    await admin.post(`${P}/feedback`, { id: 'taken', conversationId: 'c0', type: 'positive' });
    const res = await admin.post(`${P}/feedback/bulk`, [
      { id: 'ok-1', conversationId: 'c1', type: 'positive' },
      { id: 'bad-type', conversationId: 'c2', type: 'neutral' },
      { id: 'ok-2', conversationId: 'c3', type: 'negative', messageId: 'm3', details: 'meh' },
      { id: 'taken', conversationId: 'c4', type: 'positive' },
      { id: 'ok-1', conversationId: 'c5', type: 'positive' },
      'not an object',
      { type: 'positive' },
    ]);
    expect(res.status).toBe(201);
    expect(res.body.data.map((f: { id: string }) => f.id)).toEqual(['ok-1', 'ok-2']);
    expect(res.body.data[1]).toMatchObject({ conversationId: 'c3', messageId: 'm3', type: 'negative', details: 'meh' });
    expect(res.body.errors).toEqual([
      { index: 1, conversationId: 'c2', message: expect.stringContaining('/type') },
      { index: 3, conversationId: 'c4', message: expect.stringContaining('already exists') },
      { index: 4, conversationId: 'c5', message: expect.stringContaining('more than once') },
      { index: 5, conversationId: null, message: expect.any(String) },
      { index: 6, conversationId: null, message: expect.stringContaining('/conversationId') },
    ]);
    const list = await admin.get(`${P}/feedback?limit=100`);
    expect(list.body.data.map((f: { id: string }) => f.id).sort()).toEqual(['ok-1', 'ok-2', 'taken']);
    expect((await admin.get(`${P}/feedback/taken`)).body.data.conversationId).toBe('c0');

    const events = await feedbackEvents(p, 3);
    expect(events.map((e) => (e.data as { feedback: { id: string } }).feedback.id).sort()).toEqual([
      'ok-1',
      'ok-2',
      'taken',
    ]);
  });

  test('when every item is invalid, then it answers 422 with a pointer per problem and stores nothing', async () => {
    const p = aProject();
    const res = await admin.post(`${projectPath(p)}/feedback/bulk`, [
      { conversationId: 'c1', type: 'meh' },
      { type: 'positive' },
    ]);
    expectProblem(res, 422, '/0/type');
    expectProblem(res, 422, '/1/conversationId');
    expect(await feedbackCount(p)).toBe(0);
  });

  test.each([
    ['the body is an empty array', []],
    ['the body is an object', { conversationId: 'c1', type: 'positive' }],
    [
      'the body has more than 100 items',
      Array.from({ length: 101 }, () => ({ conversationId: 'c1', type: 'positive' })),
    ],
  ])('when %s, then bulk answers 400 and stores nothing', async (_what, body) => {
    const p = aProject();
    expectProblem(await admin.post(`${projectPath(p)}/feedback/bulk`, body), 400);
    expect(await feedbackCount(p)).toBe(0);
  });
});

describe('feedback access', () => {
  test('when no credential is sent, then every feedback operation answers 401', async () => {
    const P = projectPath(aProject());
    const anon = client(stack.gatewayUrl);
    expectProblem(await anon.get(`${P}/feedback`), 401);
    expectProblem(await anon.post(`${P}/feedback`, { conversationId: 'c', type: 'positive' }), 401);
    expectProblem(await anon.post(`${P}/feedback/bulk`, [{ conversationId: 'c', type: 'positive' }]), 401);
    expectProblem(await anon.get(`${P}/feedback/f1`), 401);
    expectProblem(await anon.patch(`${P}/feedback/f1`, { type: 'negative' }), 401);
    expectProblem(await anon.delete(`${P}/feedback/f1`), 401);
  });

  test("when a tenant token reaches for another tenant's feedback, then it answers 403 and changes nothing", async () => {
    const theirs = aProject();
    const created = await admin.post(`${projectPath(theirs)}/feedback`, {
      id: 'f1',
      conversationId: 'c',
      type: 'positive',
    });
    const me = client(stack.gatewayUrl, await aTenantToken(admin, aProject().tenantId));
    expectProblem(await me.get(`${projectPath(theirs)}/feedback/f1`), 403);
    expectProblem(await me.get(`${projectPath(theirs)}/feedback`), 403);
    expectProblem(await me.patch(`${projectPath(theirs)}/feedback/f1`, { type: 'negative' }), 403);
    expectProblem(await me.delete(`${projectPath(theirs)}/feedback/f1`), 403);
    expectProblem(await me.post(`${projectPath(theirs)}/feedback`, { conversationId: 'c', type: 'positive' }), 403);
    expect((await admin.get(`${projectPath(theirs)}/feedback/f1`)).body).toEqual(created.body);
    expect(await feedbackCount(theirs)).toBe(1);
  });
});

describe('the OpenAPI document', () => {
  test('when it is fetched, then every feedback operation is there with its schemas', async () => {
    const doc = (await client(stack.gatewayUrl).get('/openapi.json')).body;
    const base = '/manage/tenants/{tenantId}/projects/{projectId}/feedback';
    expect(doc.paths[base].get.operationId).toBe('listFeedback');
    expect(doc.paths[base].post.operationId).toBe('createFeedback');
    expect(doc.paths[`${base}/bulk`].post.operationId).toBe('createFeedbackBulk');
    expect(doc.paths[`${base}/{id}`].get.operationId).toBe('getFeedback');
    expect(doc.paths[`${base}/{id}`].patch.operationId).toBe('updateFeedback');
    expect(doc.paths[`${base}/{id}`].delete.operationId).toBe('deleteFeedback');
    const names = doc.paths[base].get.parameters.map((x: { name: string }) => x.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'page',
        'limit',
        'conversationId',
        'messageId',
        'agentId',
        'type',
        'startDate',
        'endDate',
      ]),
    );
    const bulk = doc.paths[`${base}/bulk`].post.requestBody.content['application/json'].schema;
    expect(bulk).toMatchObject({
      type: 'array',
      minItems: 1,
      maxItems: 100,
      items: { type: 'object', required: ['conversationId', 'type'] },
    });
    expect(
      doc.paths[`${base}/bulk`].post.responses['201'].content['application/json'].schema.properties,
    ).toHaveProperty('errors');
  });
});
