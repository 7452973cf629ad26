import { adminClient, anAnalyticsKey, anApiKey, aProject, client, eventually, projectPath, rowsOfProject, testDbPrefix, testStack, type Client } from '@platform/testkit';
import { expectProblem } from '../support/expect-problem';
import { anEvaluator, evalsPath, finishedRun, resultsOf, runsPath } from '../support/evals';

const stack = testStack();
const admin = adminClient(stack);

type Project = { tenantId: string; projectId: string };

/** The erasure job once every service has done its part. */
async function doneErasure(c: Client, p: Project, id: string) {
  return eventually(
    async () => {
      const res = await c.get(`${projectPath(p)}/erasures/${id}`);
      return res.status === 200 && res.body.data.status === 'done' ? res.body.data : undefined;
    },
    `erasure ${id} to be done`,
    40_000,
  );
}

/** Data of two conversations in every service that holds conversation data; answers the clients and the run id. */
async function twoConversations(p: Project) {
  const { key } = await anApiKey(admin, p);
  const run = client(stack.gatewayUrl, key);
  for (const [id, anchor] of [
    ['ev-gone-1', { conversationId: 'c-gone' }],
    ['ev-gone-2', { conversationId: 'c-gone' }],
    ['ev-kept', { conversationId: 'c-kept' }],
    ['ev-message-only', { messageId: 'm-only' }],
  ] as const) {
    expect((await run.post('/run/v1/events', { id, type: 'message', properties: { text: 'a refund please' }, ...anchor })).status).toBe(201);
  }
  const ingest = client(stack.analyticsUrl, (await anAnalyticsKey(admin, p)).key);
  for (const conversationId of ['c-gone', 'c-kept']) {
    expect((await ingest.post('/events', { entityType: 'conversation', conversationId, type: 'conversation.opened' })).status).toBe(201);
  }
  for (const conversationId of ['c-gone', 'c-kept']) {
    expect((await admin.post(`${projectPath(p)}/feedback`, { conversationId, type: 'negative' })).status).toBe(201);
  }
  const evaluator = await anEvaluator(admin, p, { kind: 'contains', config: { value: 'refund', eventType: 'message', field: 'properties.text' } });
  const started = await admin.post(`${evalsPath(p)}/evaluate-conversations`, { conversationIds: ['c-gone', 'c-kept'], evaluatorIds: [evaluator.id] });
  expect(started.status).toBe(202);
  await finishedRun(admin, p, started.body.evaluationRunId);
  return { run, runId: started.body.evaluationRunId as string };
}

describe('erasure of a conversation', () => {
  test('when a conversation is deleted, then its run events, analytics events, feedback and evaluation results are gone and the rest stays', async () => {
    const p = aProject();
    const { run, runId } = await twoConversations(p);

    const res = await admin.delete(`${projectPath(p)}/conversations/c-gone`);
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({ id: expect.any(String), kind: 'conversation', conversationId: 'c-gone', completedAt: null });
    expect(res.body.data.services.map((s: { service: string }) => s.service).sort()).toEqual(['analytics', 'evals', 'events-ingest', 'management']);
    const done = await doneErasure(admin, p, res.body.data.id);
    expect(done.services.every((s: { state: string; doneAt: string | null }) => s.state === 'done' && s.doneAt !== null)).toBe(true);
    expect(done.completedAt).toEqual(expect.any(String));

    const feedback = await admin.get(`${projectPath(p)}/feedback`);
    expect(feedback.body.data.map((f: { conversationId: string }) => f.conversationId)).toEqual(['c-kept']);
    const results = await resultsOf(admin, p, runId);
    expect(results.map((r) => r.conversationId)).toEqual(['c-kept']);
    const evaluation = await admin.get(`${runsPath(p)}/${runId}`);
    expect(evaluation.body.data).toMatchObject({ conversationIds: ['c-kept'], totalItems: 1, completedItems: 1, status: 'completed' });
    const counts = await admin.get(`${projectPath(p)}/analytics/counts`);
    expect(counts.body.data.total).toBe(1);
    // An erased event's id is free again: posting it creates a new event. The others are still there (a replay).
    expect((await run.post('/run/v1/events', { id: 'ev-gone-1', type: 'message', conversationId: 'c-gone' })).status).toBe(201);
    expect((await run.post('/run/v1/events', { id: 'ev-kept', type: 'message', conversationId: 'c-kept' })).status).toBe(200);
    expect((await run.post('/run/v1/events', { id: 'ev-message-only', type: 'message', messageId: 'm-only' })).status).toBe(200);
  }, 120_000);

  test('when the deletion is repeated, then it answers 202 again and changes nothing more', async () => {
    const p = aProject();
    expect((await admin.post(`${projectPath(p)}/feedback`, { conversationId: 'c-kept', type: 'positive' })).status).toBe(201);
    const first = await admin.delete(`${projectPath(p)}/conversations/c-twice`);
    const second = await admin.delete(`${projectPath(p)}/conversations/c-twice`);
    expect([first.status, second.status]).toEqual([202, 202]);
    await doneErasure(admin, p, first.body.data.id);
    await doneErasure(admin, p, second.body.data.id);
    expect((await admin.get(`${projectPath(p)}/feedback`)).body.pagination.total).toBe(1);
  }, 60_000);

  test('when the conversation id or the erasure id is not valid, then it answers 400 or 404 and starts nothing', async () => {
    const p = aProject();
    expectProblem(await admin.delete(`${projectPath(p)}/conversations/${encodeURIComponent('bad id!')}`), 400);
    expectProblem(await admin.get(`${projectPath(p)}/erasures/er_unknown`), 404);
  });
});

describe('erasure of a project', () => {
  test('when a project is deleted, then no service holds a document of it and its event ids are free again', async () => {
    const p = aProject();
    const other = { tenantId: p.tenantId, projectId: `${p.projectId}-other` };
    await twoConversations(p);
    await twoConversations(other);
    const P = projectPath(p);
    expect((await admin.post(`${P}/webhook-destinations`, { name: 'hook', url: 'https://hooks.example.com/a', eventTypes: ['feedback.created'] })).status).toBe(201);
    expect((await admin.post(`${P}/credentials`, { id: 'cred-1', name: 'token', type: 'memory', credentialStoreId: 'memory-default', retrievalParams: { key: 'k' } })).status).toBe(201);
    expect(Object.keys(await rowsOfProject(stack.env.MONGO_URL!, testDbPrefix(), p)).length).toBeGreaterThan(5);

    const res = await admin.delete(P);
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({ kind: 'project', conversationId: null });
    expect(res.body.data.services).toHaveLength(7);
    await doneErasure(admin, p, res.body.data.id);

    // The erasure job and its parts are the one record kept (ids only): the proof of what was erased, and when.
    const left = await rowsOfProject(stack.env.MONGO_URL!, testDbPrefix(), p);
    expect(Object.keys(left).sort()).toEqual([expect.stringMatching(/_management\.erasureParts$/), expect.stringMatching(/_management\.erasures$/)]);
    expect((await admin.get(`${P}/feedback`)).body.pagination.total).toBe(0);
    // Its API keys are gone with it; with a new one, an event id it had is a new event.
    const run = client(stack.gatewayUrl, (await anApiKey(admin, p)).key);
    expect((await run.post('/run/v1/events', { id: 'ev-kept', type: 'message', conversationId: 'c-kept' })).status).toBe(201);
    // Another project of the same tenant keeps everything.
    expect((await admin.get(`${projectPath(other)}/feedback`)).body.pagination.total).toBe(2);
  }, 180_000);
});
