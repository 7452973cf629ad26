import { GET_AGENT_DEFINITION_SUBJECT } from '@platform/contracts';
import { aProject, aStoredAgent, eventually, requestSubject, uniqueId } from '@platform/testkit';
import { expectProblem } from './helpers/expect-problem';
import { aConversation, aFeedback, anEvaluator, evalsPath, finishedRun, improvementsPath, resultsOf, runsPath, startEvalsStack } from './support/evals';

jest.setTimeout(150_000);

/** A private stack whose evals talks to a fake OpenAI-compatible LLM and can be killed mid-run. */
let es: Awaited<ReturnType<typeof startEvalsStack>>;
beforeAll(async () => {
  es = await startEvalsStack('evals-llm');
}, 120_000);
afterAll(async () => {
  await es?.stop();
});

const json = (v: unknown) => JSON.stringify(v);

async function liveAgent(p: { tenantId: string; projectId: string }, agentId: string) {
  const reply = await requestSubject(es.natsUrl, GET_AGENT_DEFINITION_SUBJECT, { ...p, agentId });
  return reply.body as Record<string, any>;
}

describe('llm_judge evaluators', () => {
  test('when the judge answers, then the verdict follows the pass criteria and the judge got the conversation', async () => {
    const p = aProject();
    const good = uniqueId('conv-good');
    const bad = uniqueId('conv-bad');
    es.llm.on(good, { content: json({ score: 5, reason: 'clear' }) });
    es.llm.on(bad, { content: json({ score: 2, reason: 'vague' }) });
    await aConversation(es.stack.gatewayUrl, es.admin, p, good, [{ type: 'message', properties: { text: 'Step 1: open settings' } }]);
    await aConversation(es.stack.gatewayUrl, es.admin, p, bad, [{ type: 'message', properties: { text: 'dunno' } }]);
    const judge = await anEvaluator(es.admin, p, {
      kind: 'llm_judge',
      config: { prompt: 'Rate helpfulness from 1 to 5 as {"score": n}', passCriteria: { operator: 'and', conditions: [{ field: 'score', operator: '>=', value: 4 }] } },
    });
    const res = await es.admin.post(`${evalsPath(p)}/evaluate-conversations`, { conversationIds: [good, bad], evaluatorIds: [judge.id] });
    expect(res.status).toBe(202);
    const run = await finishedRun(es.admin, p, res.body.evaluationRunId);
    expect(run).toMatchObject({ status: 'completed', passedItems: 1, failedItems: 1 });
    const results = await resultsOf(es.admin, p, run.id);
    expect(results.find((r) => r.conversationId === good)).toMatchObject({ status: 'completed', verdict: 'passed', output: { score: 5, reason: 'clear' }, failedConditions: [] });
    expect(results.find((r) => r.conversationId === bad)).toMatchObject({ verdict: 'failed', failedConditions: [{ field: 'score', operator: '>=', value: 4, actual: 2 }] });
    const call = es.llm.received.find((r) => r.text.includes(good))!;
    expect(call.headers.authorization).toBe('Bearer sk-fake-llm');
    expect(call.body).toMatchObject({ model: 'fake-model', response_format: { type: 'json_object' } });
    expect(call.text).toContain('Step 1: open settings');
    expect(call.text).toContain('Rate helpfulness');
  });

  test('when the LLM endpoint fails, then the item is an error result and the run is failed', async () => {
    const p = aProject();
    const conv = uniqueId('conv-down');
    es.llm.on(conv, { status: 503 });
    await aConversation(es.stack.gatewayUrl, es.admin, p, conv, [{ type: 'message' }]);
    const judge = await anEvaluator(es.admin, p, { kind: 'llm_judge', config: { prompt: 'Rate it' } });
    const res = await es.admin.post(`${evalsPath(p)}/evaluate-conversations`, { conversationIds: [conv], evaluatorIds: [judge.id] });
    const run = await finishedRun(es.admin, p, res.body.evaluationRunId);
    expect(run.status).toBe('failed');
    expect((await resultsOf(es.admin, p, run.id))[0]).toMatchObject({ status: 'error', error: expect.stringContaining('503') });
  });
});

describe('evaluation runs across a restart', () => {
  test('when the evals process is killed mid-run, then a new one finishes the run without losing or repeating items', async () => {
    const p = aProject();
    const tag = uniqueId('slow');
    es.llm.on(tag, { content: json({ score: 5 }), delayMs: 300 });
    const conversations = Array.from({ length: 6 }, (_, i) => `${tag}-c${i}`);
    for (const c of conversations) await aConversation(es.stack.gatewayUrl, es.admin, p, c, [{ type: 'message', properties: { text: 'hello' } }]);
    const judge = await anEvaluator(es.admin, p, {
      kind: 'llm_judge',
      config: { prompt: 'Rate it', passCriteria: { operator: 'and', conditions: [{ field: 'score', operator: '=', value: 5 }] } },
    });
    const rule = await anEvaluator(es.admin, p, { kind: 'contains', config: { value: 'hello' } });
    const res = await es.admin.post(`${evalsPath(p)}/evaluate-conversations`, { conversationIds: conversations, evaluatorIds: [judge.id, rule.id] });
    const runId = res.body.evaluationRunId;

    const midway = await eventually(
      async () => {
        const r = (await es.admin.get(`${runsPath(p)}/${runId}`)).body.data;
        return r.completedItems >= 2 && r.completedItems < 12 ? r : undefined;
      },
      'the run to be part done',
      60_000,
      50,
    );
    expect(midway.status).toBe('running');
    await es.stack.kill(es.evals(), 'SIGKILL');
    await es.stack.startProcess('evals');

    const run = await finishedRun(es.admin, p, runId, 100_000);
    expect(run).toMatchObject({ status: 'completed', totalItems: 12, completedItems: 12, passedItems: 12, errorItems: 0 });
    const results = await resultsOf(es.admin, p, runId);
    expect(results).toHaveLength(12);
    const pairs = new Set(results.map((r) => `${r.conversationId}|${r.evaluatorId}`));
    expect(pairs.size).toBe(12);
    for (const c of conversations) for (const e of [judge.id, rule.id]) expect(pairs.has(`${c}|${e}`)).toBe(true);
  });
});

describe('improvement branches with an assistant', () => {
  const editPrompt = (value: string) => ({ op: 'replace', path: '/subAgents/writer/prompt', value });

  async function aBranch(p: { tenantId: string; projectId: string }, answer: unknown) {
    const agent = await aStoredAgent(es.admin, p);
    const marker = uniqueId('too-terse');
    es.llm.on(marker, { content: json(answer) });
    const fb = await aFeedback(es.admin, p, { conversationId: 'conv-1', type: 'negative', details: marker, agentId: agent.id });
    const res = await es.admin.post(`${improvementsPath(p)}/trigger`, { feedbackIds: [fb.id] });
    expect(res.status).toBe(201);
    return { agent, marker, ...(res.body as { branchName: string; conversationId: string }) };
  }

  test('when the assistant edits the branch, then the diff shows exactly that edit and the live agent is unchanged until merged', async () => {
    const p = aProject();
    const { agent, branchName, conversationId } = await aBranch(p, { reply: 'Made the writer more detailed', patch: [editPrompt('Write a detailed, step-by-step answer.')] });

    const view = (await es.admin.get(`${improvementsPath(p)}/${branchName}/conversation`)).body;
    expect(view).toMatchObject({ status: 'completed', statusMessage: null, conversationIds: [conversationId] });
    expect(view.messages.map((m: any) => m.role)).toEqual(['user', 'assistant']);
    expect(view.messages[1].content).toBe('Made the writer more detailed');

    const diff = await es.admin.get(`${improvementsPath(p)}/${branchName}/diff`);
    expect(diff.status).toBe(200);
    expect(diff.body).toEqual({
      branchName,
      targetBranch: 'main',
      agentId: agent.id,
      format: 'json-patch',
      hasChanges: true,
      patch: [editPrompt('Write a detailed, step-by-step answer.')],
      liveMissing: false,
    });
    expect((await liveAgent(p, agent.id)).subAgents.writer.prompt).toBe('Write the answer.');

    const merged = await es.admin.post(`${improvementsPath(p)}/${branchName}/merge`);
    expect(merged.status).toBe(200);
    expect(merged.body).toEqual({ branchName, status: 'merged' });
    const live = await liveAgent(p, agent.id);
    expect(live.subAgents.writer.prompt).toBe('Write a detailed, step-by-step answer.');
    expect(live.subAgents.router.prompt).toBe('Route the question.');
    expect((await es.admin.get(`${improvementsPath(p)}/${branchName}/diff`)).body).toMatchObject({ hasChanges: false, patch: [] });
    expect((await es.admin.get(improvementsPath(p))).body.data).toEqual([expect.objectContaining({ branchName, status: 'merged' })]);
    expectProblem(await es.admin.post(`${improvementsPath(p)}/${branchName}/continue`, { message: 'one more thing' }), 409);
    expectProblem(await es.admin.post(`${improvementsPath(p)}/${branchName}/reject`), 409);
  });

  test('when the assistant proposes an edit that does not apply, then the branch is failed, unchanged, and can be continued', async () => {
    const p = aProject();
    const { branchName } = await aBranch(p, { reply: 'Removing a thing', patch: [{ op: 'remove', path: '/subAgents/nobody' }] });
    const view = (await es.admin.get(`${improvementsPath(p)}/${branchName}/conversation`)).body;
    expect(view).toMatchObject({ status: 'failed', statusMessage: expect.stringMatching(/does not apply/) });
    expect((await es.admin.get(`${improvementsPath(p)}/${branchName}/diff`)).body).toMatchObject({ hasChanges: false, patch: [] });

    const follow = uniqueId('follow-up');
    es.llm.on(follow, { content: json({ reply: 'Renamed', patch: [{ op: 'replace', path: '/name', value: 'Support bot v2' }] }) });
    const more = await es.admin.post(`${improvementsPath(p)}/${branchName}/continue`, { message: `${follow}: rename it` });
    expect(more.status).toBe(200);
    const after = (await es.admin.get(`${improvementsPath(p)}/${branchName}/conversation`)).body;
    expect(after.status).toBe('completed');
    expect(after.messages.map((m: any) => m.content)).toEqual([expect.any(String), 'Removing a thing', `${follow}: rename it`, 'Renamed']);
    expect((await es.admin.get(`${improvementsPath(p)}/${branchName}/diff`)).body.patch).toEqual([{ op: 'replace', path: '/name', value: 'Support bot v2' }]);
    // The assistant saw the earlier turns of the branch conversation.
    expect(es.llm.received.find((r) => r.text.includes(follow))!.text).toContain('Removing a thing');
  });

  test('when two branches of one agent are merged, then the second answers 409 because the live agent changed', async () => {
    const p = aProject();
    const first = await aBranch(p, { reply: 'a', patch: [editPrompt('First edit.')] });
    const marker = uniqueId('second');
    es.llm.on(marker, { content: json({ reply: 'b', patch: [editPrompt('Second edit.')] }) });
    const fb = await aFeedback(es.admin, p, { conversationId: 'conv-2', type: 'negative', details: marker, agentId: first.agent.id });
    const second = (await es.admin.post(`${improvementsPath(p)}/trigger`, { feedbackIds: [fb.id] })).body;
    expect((await es.admin.post(`${improvementsPath(p)}/${first.branchName}/merge`)).status).toBe(200);
    expectProblem(await es.admin.post(`${improvementsPath(p)}/${second.branchName}/merge`), 409);
    expect((await liveAgent(p, first.agent.id)).subAgents.writer.prompt).toBe('First edit.');
    expect((await es.admin.get(`${improvementsPath(p)}/${second.branchName}/conversation`)).body.status).toBe('completed');
  });
});
