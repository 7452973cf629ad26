import { anApiKey, anApp, aProject, client, http, withDatabase } from '@platform/testkit';
import { admin, stack } from '../support/stack';

/**
 * End-user data through anchors (issue 54, finding 5): an anonymous session (anyone can get one) that anchors an
 * event to another user's conversation or message is never answered that user's userProperties; what is stored still
 * follows the spec's resolution rule.
 */
const ORIGIN = 'https://app.example.com';
const alice = { userId: 'alice', email: 'alice@example.com' };

async function anonymousToken(appId: string): Promise<string> {
  const res = await http('POST', `${stack.gatewayUrl}/run/auth/apps/${appId}/anonymous-session`, {
    headers: { origin: ORIGIN },
  });
  expect(res.status).toBe(200);
  return res.body.token as string;
}

const postAs = (token: string, appId: string, body: Record<string, unknown>) =>
  http('POST', `${stack.gatewayUrl}/run/v1/events`, {
    token,
    json: body,
    headers: { origin: ORIGIN, 'x-app-id': appId },
  });

const storedUserProperties = (p: { tenantId: string; projectId: string }, id: string) =>
  withDatabase(stack.env.MONGO_URL!, 'events-ingest', async (db) => {
    const row = await db.collection('runEvents').findOne({ _id: `${p.tenantId}:${p.projectId}:${id}` as never });
    return typeof row?.userProperties === 'string' ? JSON.parse(row.userProperties) : (row?.userProperties ?? null);
  });

describe('userProperties resolved from anchors', () => {
  test("when an anonymous session anchors events to another user's conversation and message, then the answers carry no userProperties of that user, while the stored events keep the resolved value", async () => {
    const p = aProject();
    const { key } = await anApiKey(admin, p);
    const server = client(stack.gatewayUrl, key);
    expect(
      (
        await server.post('/run/v1/events', {
          id: 'evt-a1',
          type: 'message',
          conversationId: 'conv-alice',
          messageId: 'msg-alice',
          userProperties: alice,
          properties: { text: 'my address is …' },
        })
      ).status,
    ).toBe(201);
    const app = await anApp(admin, p);
    const token = await anonymousToken(app.id);

    const byConversation = await postAs(token, app.id, { id: 'anon-1', type: 'probe', conversationId: 'conv-alice' });
    expect(byConversation.status).toBe(201);
    expect(byConversation.body.data.userProperties).toBeNull();
    const byMessage = await postAs(token, app.id, { id: 'anon-2', type: 'probe', messageId: 'msg-alice' });
    expect(byMessage.status).toBe(201);
    expect(byMessage.body.data.userProperties).toBeNull();
    // Its own userProperties are echoed as sent (after the placeholder filter).
    const own = await postAs(token, app.id, {
      id: 'anon-3',
      type: 'probe',
      conversationId: 'conv-alice',
      userProperties: { userId: 'mallory', identificationType: 'IDENTIFIED' },
    });
    expect(own.body.data.userProperties).toEqual({ userId: 'mallory' });
    // A replay of Alice's event id answers nothing of Alice's data.
    const replay = await postAs(token, app.id, { id: 'evt-a1', type: 'probe' });
    expect(replay.status).toBe(200);
    expect(replay.body.data).toMatchObject({
      id: 'evt-a1',
      type: 'probe',
      userProperties: null,
      properties: null,
      conversationId: null,
      messageId: null,
    });
    expect(JSON.stringify(replay.body)).not.toContain('alice');

    // Stored as the spec resolves it (for analytics and webhooks), and the tenant's own key still sees it.
    expect(await storedUserProperties(p, 'anon-1')).toEqual(alice);
    expect(await storedUserProperties(p, 'anon-2')).toEqual(alice);
    expect(
      (await server.post('/run/v1/events', { type: 'message', messageId: 'msg-alice' })).body.data.userProperties,
    ).toEqual(alice);
  });
});
