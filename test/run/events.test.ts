import { listConversationEvents, eventCreated } from '@platform/contracts';
import { subscribe, type EventOf } from '@platform/consumer';
import { expectProblem } from '../support/expect-problem';
import {
  connectAs,
  aProject,
  anApiKey,
  client,
  eventually,
  http,
  requestSubject,
  uniqueId,
  withDatabase,
} from '@platform/testkit';
import { admin, stack } from '../support/stack';

async function runClient(agentId = 'agent-1') {
  const p = aProject();
  const { key } = await anApiKey(admin, p, { agentId });
  return { p, run: client(stack.gatewayUrl, key) };
}

describe('POST /run/v1/events', () => {
  test('when no API key or a wrong one is sent, then it answers 401 problem+json', async () => {
    const anon = client(stack.gatewayUrl);
    for (const token of [undefined, 'sk_nope', 'sk_AAAAAAAAAAAA.' + 'x'.repeat(43)]) {
      const res = await anon.withToken(token).post('/run/v1/events', { type: 'x' });
      expect(res.status).toBe(401);
      expect(res.contentType).toMatch(/problem\+json/);
    }
  });

  test('when the body is invalid, then it answers 400 and stores nothing', async () => {
    const { p, run } = await runClient();
    const cases: unknown[] = [
      {},
      { type: '' },
      { type: 1 },
      { type: 'x', properties: 'no' },
      { type: 'x', serverMetadata: { authMethod: 'forged' } },
      { type: 'x', id: 'bad\u0001id' },
      [],
    ];
    for (const body of cases) {
      const res = await run.post('/run/v1/events', body);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('bad_request');
    }
    const raw = await http('POST', `${stack.gatewayUrl}/run/v1/events`, {
      token: run.token,
      raw: '{"type":',
      headers: { 'content-type': 'application/json' },
    });
    expect(raw.status).toBe(400);
    const count = await withDatabase(stack.env.MONGO_URL!, 'events-ingest', (db) =>
      db.collection('runEvents').countDocuments({ tenantId: p.tenantId }),
    );
    expect(count).toBe(0);
  });

  test.each([
    ['a nested string', { type: 'x', properties: { 'a/b~c': ['ok', 'y\u0000'] } }, '/properties/a~1b~0c/1'],
    ['a key of a nested map', { type: 'x', metadata: { deep: { 'k\u0000': 'v' } } }, '/metadata/deep'],
    ['a top-level string', { type: 'x\u0000' }, '/type'],
  ])('when %s holds a NUL, then it answers 400 naming where, and stores nothing', async (_what, body, pointer) => {
    const { p, run } = await runClient();
    const res = await run.post('/run/v1/events', body);
    expectProblem(res, 400, pointer);
    const count = await withDatabase(stack.env.MONGO_URL!, 'events-ingest', (db) =>
      db.collection('runEvents').countDocuments({ tenantId: p.tenantId }),
    );
    expect(count).toBe(0);
  });

  test('when an event carries serverMetadata-free fields, then the server records the auth method and generates an id', async () => {
    const { p, run } = await runClient('agent-x');
    const res = await run.post('/run/v1/events', {
      type: 'clicked',
      conversationId: 'conv-not-yet',
      messageId: 'msg-not-yet',
      metadata: { mine: true },
      properties: { a: 1 },
    });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      tenantId: p.tenantId,
      projectId: p.projectId,
      agentId: 'agent-x',
      conversationId: 'conv-not-yet',
      messageId: 'msg-not-yet',
      metadata: { mine: true },
      properties: { a: 1 },
      userProperties: null,
      serverMetadata: { authMethod: 'api_key' },
    });
  });

  test('when the same id is posted again, then it answers 200 with the original row and original createdAt', async () => {
    const { run } = await runClient();
    const first = await run.post('/run/v1/events', { id: 'dup', type: 'a', properties: { v: 1 } });
    // The repeat arrives in a later millisecond, so a second createdAt would differ from the first.
    await eventually(
      () => Date.now() > Date.parse(first.body.data.createdAt),
      'a later millisecond than the first createdAt',
    );
    const second = await run.post('/run/v1/events', { id: 'dup', type: 'b', properties: { v: 2 } });
    expect(first.status).toBe(201);
    expect(second.status).toBe(200);
    expect(second.body.data).toEqual(first.body.data);
  });

  test('when 20 duplicates of one id arrive at once, then exactly one row exists and every answer carries it', async () => {
    const { p, run } = await runClient();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => run.post('/run/v1/events', { id: 'race', type: `t${i}` })),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 201)).toHaveLength(1);
    expect(statuses.filter((s) => s === 200)).toHaveLength(19);
    const winner = results.find((r) => r.status === 201)!.body.data;
    for (const r of results) expect(r.body.data).toEqual(winner);
    const count = await withDatabase(stack.env.MONGO_URL!, 'events-ingest', (db) =>
      db.collection('runEvents').countDocuments({ tenantId: p.tenantId, projectId: p.projectId }),
    );
    expect(count).toBe(1);
  });

  test('when property keys start with $ or hold dots, then the event is stored and read back with the same keys', async () => {
    const { p, run } = await runClient();
    const nc = await connectAs(stack.env.NATS_URL!, 'admin');
    const published: Array<EventOf<typeof eventCreated>> = [];
    const sub = await subscribe(
      nc,
      eventCreated,
      { durable: uniqueId('keys').replace(/\./g, '_'), tenantId: p.tenantId },
      (e) => void published.push(e),
    );
    const properties = { $price: 3, 'a.b': { 'c.d': [{ $in: 'x' }] }, plain: 'yes' };
    const userProperties = { 'e.mail': 'ann@example.com', $plan: 'pro' };
    const metadata = { 'sdk.version': '1.2' };
    const first = await run.post('/run/v1/events', {
      id: 'keys-1',
      type: 'a',
      conversationId: 'conv-keys',
      properties,
      userProperties,
      metadata,
    });
    expect(first.status).toBe(201);
    expect(first.body.data).toMatchObject({ properties, userProperties, metadata });
    // The next event of the conversation takes its userProperties from the stored one.
    const second = await run.post('/run/v1/events', { id: 'keys-2', type: 'b', conversationId: 'conv-keys' });
    expect(second.status).toBe(201);
    expect(second.body.data.userProperties).toEqual(userProperties);
    // Read back from the database (the conversation's events, as evals reads them).
    const stored = await requestSubject(stack.env.NATS_URL!, listConversationEvents.subject, {
      ...p,
      conversationId: 'conv-keys',
      limit: 10,
    });
    expect(
      stored.body.events.map((e: { id: string; properties: unknown; userProperties: unknown; metadata: unknown }) => [
        e.id,
        e.properties,
        e.userProperties,
        e.metadata,
      ]),
    ).toEqual([
      ['keys-1', properties, userProperties, metadata],
      ['keys-2', null, userProperties, null],
    ]);
    // Every field as the API answered it, the empty ones (null) and updatedAt too, though the rows leave them out.
    expect(stored.body.events).toEqual([first.body.data, second.body.data]);
    // And published as stored: event.created carries the same keys.
    try {
      await eventually(() => published.some((e) => e.data.event.id === 'keys-1'), 'event.created of keys-1', 15_000);
      expect(published.find((e) => e.data.event.id === 'keys-1')!.data.event).toMatchObject({
        properties,
        userProperties,
        metadata,
      });
    } finally {
      await sub.stop(1000);
      await nc.drain();
    }
  });

  test('when two projects use the same event id, then each gets its own row', async () => {
    const a = await runClient();
    const b = await runClient();
    expect((await a.run.post('/run/v1/events', { id: 'shared', type: 'x' })).status).toBe(201);
    expect((await b.run.post('/run/v1/events', { id: 'shared', type: 'x' })).status).toBe(201);
  });

  test('when userProperties are given, then they win; placeholders are dropped and the marker is removed', async () => {
    const { run } = await runClient();
    const given = await run.post('/run/v1/events', {
      type: 'x',
      userProperties: { userId: 42, identificationType: 'VERIFIED' },
    });
    expect(given.body.data.userProperties).toEqual({ userId: 42 });
    for (const kind of ['ANONYMOUS', 'COOKIED']) {
      const placeholder = await run.post('/run/v1/events', {
        type: 'x',
        userProperties: { id: 'cookie-1', identificationType: kind },
      });
      expect(placeholder.body.data.userProperties).toBeNull();
    }
    const explicitNull = await run.post('/run/v1/events', {
      type: 'x',
      conversationId: 'c-null',
      userProperties: null,
    });
    expect(explicitNull.body.data.userProperties).toBeNull();
  });

  test('when userProperties are absent, then they resolve from the message anchor, then the conversation anchor, never merged', async () => {
    const { run } = await runClient();
    await run.post('/run/v1/events', {
      type: 'conv.started',
      conversationId: 'c1',
      userProperties: { userId: 'from-conversation' },
    });
    await run.post('/run/v1/events', {
      type: 'msg.sent',
      conversationId: 'c1',
      messageId: 'm1',
      userProperties: { userId: 'from-message', plan: 'pro' },
    });
    const byMessage = await run.post('/run/v1/events', { type: 'msg.read', messageId: 'm1' });
    expect(byMessage.body.data.userProperties).toEqual({ userId: 'from-message', plan: 'pro' });
    const byConversation = await run.post('/run/v1/events', { type: 'conv.rated', conversationId: 'c1' });
    expect(byConversation.body.data.userProperties).toEqual({ userId: 'from-message', plan: 'pro' });
    await run.post('/run/v1/events', { type: 'msg.other', conversationId: 'c2', messageId: 'm2' });
    await run.post('/run/v1/events', {
      type: 'conv.tagged',
      conversationId: 'c2',
      userProperties: { userId: 'c2-user' },
    });
    const derived = await run.post('/run/v1/events', { type: 'msg.reacted', messageId: 'm2' });
    expect(derived.body.data.userProperties).toEqual({ userId: 'c2-user' });
    // An event sent with userProperties: null has none, and does not hide the conversation's earlier ones from the next.
    const cleared = await run.post('/run/v1/events', {
      type: 'conv.cleared',
      conversationId: 'c2',
      userProperties: null,
    });
    expect(cleared.body.data.userProperties).toBeNull();
    const next = await run.post('/run/v1/events', { type: 'conv.next', conversationId: 'c2' });
    expect(next.body.data.userProperties).toEqual({ userId: 'c2-user' });
    const none = await run.post('/run/v1/events', { type: 'lonely', conversationId: 'never-seen' });
    expect(none.body.data.userProperties).toBeNull();
  });
});
