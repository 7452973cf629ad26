import { aProject, startReceiver, type Receiver } from '@platform/testkit';
import { admin, stack } from '../support/stack';
import { expectProblem } from '../support/expect-problem';
import { aConversation, aFeedback, anEvaluator, evalsPath, finishedRun, resultsOf, runsPath } from '../support/evals';
import { createDestination, signatureValid } from '../support/webhooks';

const receivers: Receiver[] = [];
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
});

describe('evaluation triggers and runs', () => {
  test('when the body is invalid, then both triggers answer 400 and queue nothing', async () => {
    const p = aProject();
    for (const body of [{}, { conversationId: '' }, { conversationId: 'bad id!' }, { conversationId: 'c', extra: 1 }]) {
      expectProblem(await admin.post(`${evalsPath(p)}/evaluate-conversation`, body), 400);
    }
    for (const body of [
      {},
      { conversationIds: [], evaluatorIds: ['e'] },
      { conversationIds: ['c'], evaluatorIds: [] },
      { conversationIds: 'c', evaluatorIds: ['e'] },
    ]) {
      expectProblem(await admin.post(`${evalsPath(p)}/evaluate-conversations`, body), 400);
    }
    expect((await admin.get(runsPath(p))).body.pagination.total).toBe(0);
  });

  test('when the conversation or an evaluator is unknown, then it answers 404 naming them and queues nothing', async () => {
    const p = aProject();
    await aConversation(stack.gatewayUrl, admin, p, 'conv-known', [{ type: 'message', properties: { text: 'hi' } }]);
    const e = await anEvaluator(admin, p, { kind: 'negative_feedback' });
    expectProblem(await admin.post(`${evalsPath(p)}/evaluate-conversation`, { conversationId: 'conv-nope' }), 404);
    const missingEval = await admin.post(`${evalsPath(p)}/evaluate-conversations`, {
      conversationIds: ['conv-known'],
      evaluatorIds: [e.id, 'ev-missing'],
    });
    expectProblem(missingEval, 404);
    expect(missingEval.body.detail).toContain('ev-missing');
    const missingConv = await admin.post(`${evalsPath(p)}/evaluate-conversations`, {
      conversationIds: ['conv-known', 'conv-gone'],
      evaluatorIds: [e.id],
    });
    expectProblem(missingConv, 404);
    expect(missingConv.body.detail).toContain('conv-gone');
    expect(missingConv.body.detail).not.toContain('conv-known');
    expect((await admin.get(runsPath(p))).body.pagination.total).toBe(0);
  });

  test('when conversations are evaluated, then the run moves from queued to completed and every item has its result', async () => {
    const p = aProject();
    await aConversation(stack.gatewayUrl, admin, p, 'conv-refund', [
      { type: 'message', properties: { text: 'I want a REFUND for order #12345' } },
      { type: 'rated', properties: { rating: 5 } },
    ]);
    await aConversation(stack.gatewayUrl, admin, p, 'conv-hello', [
      { type: 'message', properties: { text: 'hello there' } },
      { type: 'rated', properties: { stars: 'many' } },
    ]);
    const contains = await anEvaluator(admin, p, {
      kind: 'contains',
      config: { value: 'refund', eventType: 'message', field: 'properties.text' },
    });
    const regex = await anEvaluator(admin, p, { kind: 'regex', config: { pattern: '#\\d{5}', expect: 'absent' } });
    const schema = await anEvaluator(admin, p, {
      kind: 'json_schema',
      config: { eventType: 'rated', schema: { type: 'object', required: ['rating'] } },
    });

    const res = await admin.post(`${evalsPath(p)}/evaluate-conversations`, {
      conversationIds: ['conv-refund', 'conv-hello'],
      evaluatorIds: [contains.id, regex.id, schema.id],
    });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({
      conversationIds: ['conv-refund', 'conv-hello'],
      evaluatorIds: [contains.id, regex.id, schema.id],
      evaluationRunId: expect.any(String),
      message: expect.any(String),
    });
    const runId = res.body.evaluationRunId;
    const first = await admin.get(`${runsPath(p)}/${runId}`);
    expect(first.status).toBe(200);
    expect(['queued', 'running', 'completed']).toContain(first.body.data.status);
    expect(first.body.data).toMatchObject({ id: runId, totalItems: 6 });

    const run = await finishedRun(admin, p, runId);
    expect(run).toMatchObject({
      status: 'completed',
      totalItems: 6,
      completedItems: 6,
      passedItems: 3,
      failedItems: 3,
      errorItems: 0,
      startedAt: expect.any(String),
      completedAt: expect.any(String),
    });
    const results = await resultsOf(admin, p, runId);
    const verdict = (conv: string, ev: string) =>
      results.find((r) => r.conversationId === conv && r.evaluatorId === ev)?.verdict;
    expect(results).toHaveLength(6);
    expect(verdict('conv-refund', contains.id)).toBe('passed');
    expect(verdict('conv-hello', contains.id)).toBe('failed');
    expect(verdict('conv-refund', regex.id)).toBe('failed');
    expect(verdict('conv-hello', regex.id)).toBe('passed');
    expect(verdict('conv-refund', schema.id)).toBe('passed');
    expect(verdict('conv-hello', schema.id)).toBe('failed');
    expect(
      results.find((r) => r.conversationId === 'conv-hello' && r.evaluatorId === contains.id)!.failedConditions,
    ).toEqual([{ field: 'properties.text', operator: 'contains', value: 'refund', actual: null }]);
    const listed = await admin.get(runsPath(p));
    expect(listed.body.data).toEqual([run]);
  });

  test('when one conversation is evaluated, then only the evaluators of its agent run', async () => {
    const p = aProject();
    await aConversation(
      stack.gatewayUrl,
      admin,
      p,
      'conv-a',
      [{ type: 'message', properties: { text: 'thanks' } }],
      'agent-a',
    );
    const all = await anEvaluator(admin, p, { kind: 'contains', config: { value: 'thanks' } });
    const mine = await anEvaluator(admin, p, { kind: 'negative_feedback', agentIds: ['agent-a'] });
    await anEvaluator(admin, p, { kind: 'negative_feedback', agentIds: ['agent-b'] });
    const res = await admin.post(`${evalsPath(p)}/evaluate-conversation`, { conversationId: 'conv-a' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      evaluationsTriggered: 2,
      success: true,
      message: expect.stringContaining('conv-a'),
    });
    const run = await finishedRun(admin, p, res.body.evaluationRunId);
    expect(run.evaluatorIds.sort()).toEqual([all.id, mine.id].sort());
    expect(run.status).toBe('completed');

    const none = aProject();
    await aConversation(stack.gatewayUrl, admin, none, 'conv-b', [{ type: 'message' }], 'agent-b');
    const zero = await admin.post(`${evalsPath(none)}/evaluate-conversation`, { conversationId: 'conv-b' });
    expect(zero.body).toMatchObject({ evaluationsTriggered: 0, success: true, evaluationRunId: null });
  });

  test('when an llm_judge runs without an LLM endpoint, then its item fails with "not configured" and the run is failed', async () => {
    const p = aProject();
    await aConversation(stack.gatewayUrl, admin, p, 'conv-j', [{ type: 'message', properties: { text: 'hi' } }]);
    const judge = await anEvaluator(admin, p, { kind: 'llm_judge', config: { prompt: 'Rate it' } });
    const res = await admin.post(`${evalsPath(p)}/evaluate-conversations`, {
      conversationIds: ['conv-j'],
      evaluatorIds: [judge.id],
    });
    const run = await finishedRun(admin, p, res.body.evaluationRunId);
    expect(run).toMatchObject({ status: 'failed', errorItems: 1, completedItems: 1 });
    const [result] = await resultsOf(admin, p, run.id);
    expect(result).toMatchObject({ status: 'error', verdict: null, error: expect.stringMatching(/not configured/) });
  });

  test('when an evaluation fails, then evaluation.failed reaches destinations scoped to that evaluator only', async () => {
    const p = aProject();
    const scoped = await startReceiver();
    const other = await startReceiver();
    receivers.push(scoped, other);
    const complaints = await anEvaluator(admin, p, { name: 'no complaints', kind: 'negative_feedback' });
    const unrelated = await anEvaluator(admin, p, { kind: 'contains', config: { value: 'zzz' } });
    const dest = await createDestination(admin, p, {
      url: scoped.url,
      eventTypes: ['evaluation.failed'],
      evaluatorIds: [complaints.id],
    });
    await createDestination(admin, p, {
      url: other.url,
      eventTypes: ['evaluation.failed'],
      evaluatorIds: ['someone-else'],
    });
    await aConversation(
      stack.gatewayUrl,
      admin,
      p,
      'conv-angry',
      [{ type: 'message', properties: { text: 'this is bad' } }],
      'agent-a',
    );
    await aFeedback(admin, p, {
      conversationId: 'conv-angry',
      type: 'negative',
      details: 'rude answer',
      agentId: 'agent-a',
    });

    const res = await admin.post(`${evalsPath(p)}/evaluate-conversations`, {
      conversationIds: ['conv-angry'],
      evaluatorIds: [complaints.id, unrelated.id],
    });
    const [got] = await scoped.waitFor(
      (r) => r.json?.type === 'evaluation.failed' && r.json?.data?.evaluator?.id === complaints.id,
    );
    expect(signatureValid(dest.secret as string, got!)).toBe(true);
    expect(got!.json).toMatchObject({
      type: 'evaluation.failed',
      data: {
        evaluator: { id: complaints.id, name: 'no complaints' },
        conversation: { id: 'conv-angry', agentId: 'agent-a' },
        failedConditions: [{ field: 'feedback.type', operator: '!=', value: 'negative', actual: 'negative' }],
        evaluationRunId: res.body.evaluationRunId,
      },
    });
    const run = await finishedRun(admin, p, res.body.evaluationRunId);
    expect(run).toMatchObject({ status: 'completed', failedItems: 2 });
    // The unrelated evaluator failed too, but no destination is scoped to it; the other destination gets nothing.
    expect(scoped.received.filter((r) => r.json?.data?.evaluator?.id === unrelated.id)).toEqual([]);
    expect(other.received).toEqual([]);
  });
});
