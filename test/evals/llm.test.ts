import { getAgentDefinition, replaceAgentDefinition } from '@platform/contracts';
import {
  aProject,
  aStoredAgent,
  eventually,
  projectPath,
  requestSubject,
  startReceiver,
  testStack,
  uniqueId,
  withDatabase,
  type Receiver,
} from '@platform/testkit';
import { expectProblem } from '../support/expect-problem';
import {
  aConversation,
  aFeedback,
  anEvaluator,
  evalsPath,
  finishedRun,
  improvementsPath,
  resultsOf,
  runsPath,
  settledBranch,
  startEvalsStack,
} from '../support/evals';
import { createDestination, signatureValid } from '../support/webhooks';

jest.setTimeout(150_000);

/** A private stack whose evals talks to a fake OpenAI-compatible LLM and can be killed mid-run. */
let es: Awaited<ReturnType<typeof startEvalsStack>>;
beforeAll(async () => {
  es = await startEvalsStack('evals-llm');
}, 120_000);
afterAll(async () => {
  await es?.stop();
});

// The flaky failure of "the verdict follows the pass criteria" (run failed, 0 items passed, in full runs only): this
// stack shared the shared test stack's databases, and that stack's outbox sweep found this stack's pending evaluation
// items and relayed them onto its own NATS, where its evals (no LLM configured) stored an error result for each item
// first. Reproduced by running the test with the shared stack's OUTBOX_SWEEP_MS at 100: failed, 0 passed, 0 failed.
test("when the shared test stack runs beside this stack, then the two share no database (so neither relays the other's outbox)", () => {
  expect(es.stack.env.MONGO_DB_PREFIX).not.toBe(testStack().env.MONGO_DB_PREFIX);
});

const json = (v: unknown) => JSON.stringify(v);

const withoutTimes = ({ createdAt: _c, updatedAt: _u, ...rest }: Record<string, any>) => rest;

/** Writes a document straight into a service's database (to set up the state a killed process leaves behind). */
async function insertRaw(service: string, collection: string, doc: Record<string, unknown>) {
  await withDatabase(
    es.stack.env.MONGO_URL!,
    service,
    (db) => db.collection(collection).insertOne(doc as never),
    es.stack.dbPrefix,
  );
}

async function liveAgent(p: { tenantId: string; projectId: string }, agentId: string) {
  const reply = await requestSubject(es.natsUrl, getAgentDefinition.subject, { ...p, agentId });
  return reply.body as Record<string, any>;
}

describe('llm_judge evaluators', () => {
  test('when the judge answers, then the verdict follows the pass criteria and the judge got the conversation', async () => {
    const p = aProject();
    const good = uniqueId('conv-good');
    const bad = uniqueId('conv-bad');
    es.llm.on(good, { content: json({ score: 5, reason: 'clear' }) });
    es.llm.on(bad, { content: json({ score: 2, reason: 'vague' }) });
    await aConversation(es.stack.gatewayUrl, es.admin, p, good, [
      { type: 'message', properties: { text: 'Step 1: open settings' } },
    ]);
    await aConversation(es.stack.gatewayUrl, es.admin, p, bad, [{ type: 'message', properties: { text: 'dunno' } }]);
    const judge = await anEvaluator(es.admin, p, {
      kind: 'llm_judge',
      config: {
        prompt: 'Rate helpfulness from 1 to 5 as {"score": n}',
        passCriteria: { operator: 'and', conditions: [{ field: 'score', operator: '>=', value: 4 }] },
      },
    });
    const res = await es.admin.post(`${evalsPath(p)}/evaluate-conversations`, {
      conversationIds: [good, bad],
      evaluatorIds: [judge.id],
    });
    expect(res.status).toBe(202);
    const run = await finishedRun(es.admin, p, res.body.evaluationRunId);
    expect(run).toMatchObject({ status: 'completed', passedItems: 1, failedItems: 1 });
    const results = await resultsOf(es.admin, p, run.id);
    expect(results.find((r) => r.conversationId === good)).toMatchObject({
      status: 'completed',
      verdict: 'passed',
      output: { score: 5, reason: 'clear' },
      failedConditions: [],
    });
    expect(results.find((r) => r.conversationId === bad)).toMatchObject({
      verdict: 'failed',
      failedConditions: [{ field: 'score', operator: '>=', value: 4, actual: 2 }],
    });
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
    const res = await es.admin.post(`${evalsPath(p)}/evaluate-conversations`, {
      conversationIds: [conv],
      evaluatorIds: [judge.id],
    });
    const run = await finishedRun(es.admin, p, res.body.evaluationRunId);
    expect(run.status).toBe('failed');
    expect((await resultsOf(es.admin, p, run.id))[0]).toMatchObject({
      status: 'error',
      error: expect.stringContaining('503'),
    });
  });
});

describe('evaluation runs across a restart', () => {
  test('when the evals process is killed mid-run, then a new one finishes the run without losing or repeating items', async () => {
    const p = aProject();
    const tag = uniqueId('slow');
    es.llm.on(tag, { content: json({ score: 5 }), delayMs: 300 });
    const conversations = Array.from({ length: 6 }, (_, i) => `${tag}-c${i}`);
    for (const c of conversations)
      await aConversation(es.stack.gatewayUrl, es.admin, p, c, [{ type: 'message', properties: { text: 'hello' } }]);
    const judge = await anEvaluator(es.admin, p, {
      kind: 'llm_judge',
      config: {
        prompt: 'Rate it',
        passCriteria: { operator: 'and', conditions: [{ field: 'score', operator: '=', value: 5 }] },
      },
    });
    const rule = await anEvaluator(es.admin, p, { kind: 'contains', config: { value: 'hello' } });
    const res = await es.admin.post(`${evalsPath(p)}/evaluate-conversations`, {
      conversationIds: conversations,
      evaluatorIds: [judge.id, rule.id],
    });
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
    expect(run).toMatchObject({
      status: 'completed',
      totalItems: 12,
      completedItems: 12,
      passedItems: 12,
      errorItems: 0,
    });
    const results = await resultsOf(es.admin, p, runId);
    expect(results).toHaveLength(12);
    const pairs = new Set(results.map((r) => `${r.conversationId}|${r.evaluatorId}`));
    expect(pairs.size).toBe(12);
    for (const c of conversations) for (const e of [judge.id, rule.id]) expect(pairs.has(`${c}|${e}`)).toBe(true);
  });
});

describe('improvement branches with an assistant', () => {
  const editPrompt = (agentId: string, value: string) => ({
    op: 'replace',
    path: `/agents/${agentId}/subAgents/writer/prompt`,
    value,
  });

  /** A stored agent, feedback on it, and a branch triggered from that feedback whose assistant answers `answer(agentId)`. */
  async function aBranch(
    p: { tenantId: string; projectId: string },
    answer: (agentId: string) => unknown,
    opts: { gate?: string } = {},
  ) {
    const agent = await aStoredAgent(es.admin, p);
    const marker = uniqueId('too-terse');
    es.llm.on(marker, { content: json(answer(agent.id)), ...(opts.gate ? { gate: opts.gate } : {}) });
    const fb = await aFeedback(es.admin, p, {
      conversationId: 'conv-1',
      type: 'negative',
      details: marker,
      agentId: agent.id,
    });
    const res = await es.admin.post(`${improvementsPath(p)}/trigger`, { feedbackIds: [fb.id] });
    expect(res.status).toBe(201);
    return { agent, marker, ...(res.body as { branchName: string; conversationId: string }) };
  }

  test('when an improvement is triggered, then it answers at once with the branch running, and the assistant edit shows in the diff once completed', async () => {
    const p = aProject();
    const gate = uniqueId('gate');
    const { agent, branchName, conversationId } = await aBranch(
      p,
      (id) => ({
        reply: 'Made the writer more detailed',
        patch: [editPrompt(id, 'Write a detailed, step-by-step answer.')],
      }),
      { gate },
    );
    // The assistant has not answered yet (the fake holds its answer): the branch exists and says so.
    const early = (await es.admin.get(`${improvementsPath(p)}/${branchName}/conversation`)).body;
    expect(early).toMatchObject({ status: 'running', statusMessage: null, conversationIds: [conversationId] });
    expect(early.messages.map((m: any) => m.role)).toEqual(['user']);
    expect((await es.admin.get(improvementsPath(p))).body.data).toEqual([
      expect.objectContaining({ branchName, status: 'running' }),
    ]);
    expectProblem(await es.admin.post(`${improvementsPath(p)}/${branchName}/continue`, { message: 'and more' }), 409);
    expectProblem(await es.admin.post(`${improvementsPath(p)}/${branchName}/merge`), 409);

    es.llm.open(gate);
    const view = await settledBranch(es.admin, p, branchName);
    expect(view).toMatchObject({ status: 'completed', statusMessage: null });
    expect(view.messages.map((m: any) => m.role)).toEqual(['user', 'assistant']);
    expect(view.messages[1].content).toBe('Made the writer more detailed');
    const diff = await es.admin.get(`${improvementsPath(p)}/${branchName}/diff`);
    expect(diff.status).toBe(200);
    expect(diff.body).toEqual({
      branchName,
      targetBranch: 'main',
      agentId: agent.id,
      agentIds: [agent.id],
      format: 'json-patch',
      hasChanges: true,
      patch: [editPrompt(agent.id, 'Write a detailed, step-by-step answer.')],
      liveMissing: false,
    });
    expect((await liveAgent(p, agent.id)).subAgents.writer.prompt).toBe('Write the answer.');
  });

  test('when the assistant edits the branch and it is merged, then the live agent changes only then and the branch is closed', async () => {
    const p = aProject();
    const { agent, branchName } = await aBranch(p, (id) => ({
      reply: 'Made the writer more detailed',
      patch: [editPrompt(id, 'Write a detailed, step-by-step answer.')],
    }));
    expect((await settledBranch(es.admin, p, branchName)).status).toBe('completed');
    expect((await liveAgent(p, agent.id)).subAgents.writer.prompt).toBe('Write the answer.');

    const merged = await es.admin.post(`${improvementsPath(p)}/${branchName}/merge`);
    expect(merged.status).toBe(200);
    expect(merged.body).toEqual({ branchName, status: 'merged' });
    const live = await liveAgent(p, agent.id);
    expect(live.subAgents.writer.prompt).toBe('Write a detailed, step-by-step answer.');
    expect(live.subAgents.router.prompt).toBe('Route the question.');
    expect((await es.admin.get(`${improvementsPath(p)}/${branchName}/diff`)).body).toMatchObject({
      hasChanges: false,
      patch: [],
    });
    expect((await es.admin.get(improvementsPath(p))).body.data).toEqual([
      expect.objectContaining({ branchName, status: 'merged' }),
    ]);
    expectProblem(
      await es.admin.post(`${improvementsPath(p)}/${branchName}/continue`, { message: 'one more thing' }),
      409,
    );
    expectProblem(await es.admin.post(`${improvementsPath(p)}/${branchName}/reject`), 409);
    expectProblem(await es.admin.post(`${improvementsPath(p)}/${branchName}/merge`), 409);
  });

  test('when the assistant proposes an edit that does not apply, then the branch is failed, unchanged, and can be continued', async () => {
    const p = aProject();
    const { agent, branchName } = await aBranch(p, (id) => ({
      reply: 'Removing a thing',
      patch: [{ op: 'remove', path: `/agents/${id}/subAgents/nobody` }],
    }));
    const view = await settledBranch(es.admin, p, branchName);
    expect(view).toMatchObject({ status: 'failed', statusMessage: expect.stringMatching(/does not apply/) });
    expect((await es.admin.get(`${improvementsPath(p)}/${branchName}/diff`)).body).toMatchObject({
      hasChanges: false,
      patch: [],
      agentIds: [],
    });

    const follow = uniqueId('follow-up');
    const rename = { op: 'replace', path: `/agents/${agent.id}/name`, value: 'Support bot v2' };
    es.llm.on(follow, { content: json({ reply: 'Renamed', patch: [rename] }) });
    const more = await es.admin.post(`${improvementsPath(p)}/${branchName}/continue`, {
      message: `${follow}: rename it`,
    });
    expect(more.status).toBe(200);
    const after = await settledBranch(es.admin, p, branchName);
    expect(after.status).toBe('completed');
    expect(after.messages.map((m: any) => m.content)).toEqual([
      expect.any(String),
      'Removing a thing',
      `${follow}: rename it`,
      'Renamed',
    ]);
    expect((await es.admin.get(`${improvementsPath(p)}/${branchName}/diff`)).body.patch).toEqual([rename]);
    // The assistant saw the earlier turns of the branch conversation.
    expect(es.llm.received.find((r) => r.text.includes(follow))!.text).toContain('Removing a thing');
  });

  test('when the assistant would add an agent or change an agent id, then the turn is failed and the branch unchanged', async () => {
    const p = aProject();
    const { agent, branchName } = await aBranch(p, (id) => ({
      reply: 'Renaming the agent id',
      patch: [{ op: 'replace', path: `/agents/${id}/id`, value: 'other-id' }],
    }));
    expect(await settledBranch(es.admin, p, branchName)).toMatchObject({
      status: 'failed',
      statusMessage: expect.stringMatching(/invalid/),
    });
    const follow = uniqueId('add-agent');
    es.llm.on(follow, {
      content: json({
        reply: 'Adding one',
        patch: [{ op: 'add', path: '/agents/newcomer', value: { id: 'newcomer' } }],
      }),
    });
    await es.admin.post(`${improvementsPath(p)}/${branchName}/continue`, { message: follow });
    expect(await settledBranch(es.admin, p, branchName)).toMatchObject({
      status: 'failed',
      statusMessage: expect.stringMatching(/adds or removes agents/),
    });
    expect((await es.admin.get(`${improvementsPath(p)}/${branchName}/diff`)).body).toMatchObject({
      agentId: agent.id,
      hasChanges: false,
      patch: [],
    });
  });

  test('when two branches of one agent are merged, then the second answers 409 because the live agent changed', async () => {
    const p = aProject();
    const first = await aBranch(p, (id) => ({ reply: 'a', patch: [editPrompt(id, 'First edit.')] }));
    const marker = uniqueId('second');
    es.llm.on(marker, { content: json({ reply: 'b', patch: [editPrompt(first.agent.id, 'Second edit.')] }) });
    const fb = await aFeedback(es.admin, p, {
      conversationId: 'conv-2',
      type: 'negative',
      details: marker,
      agentId: first.agent.id,
    });
    const second = (await es.admin.post(`${improvementsPath(p)}/trigger`, { feedbackIds: [fb.id] })).body;
    await settledBranch(es.admin, p, first.branchName);
    await settledBranch(es.admin, p, second.branchName);
    expect((await es.admin.post(`${improvementsPath(p)}/${first.branchName}/merge`)).status).toBe(200);
    expectProblem(await es.admin.post(`${improvementsPath(p)}/${second.branchName}/merge`), 409);
    expect((await liveAgent(p, first.agent.id)).subAgents.writer.prompt).toBe('First edit.');
    expect((await es.admin.get(`${improvementsPath(p)}/${second.branchName}/conversation`)).body.status).toBe(
      'completed',
    );
  });

  test('when the evals process is killed while the assistant answers, then a new process answers the message once', async () => {
    const p = aProject();
    const gate = uniqueId('gate');
    const { agent, branchName, marker } = await aBranch(
      p,
      (id) => ({ reply: 'Slow but sure', patch: [editPrompt(id, 'Answer slowly.')] }),
      { gate },
    );
    await eventually(
      async () => es.llm.received.some((r) => r.text.includes(marker)) || undefined,
      'the assistant to be asked',
      30_000,
      50,
    );
    await es.stack.kill(es.evals(), 'SIGKILL');
    await es.stack.startProcess('evals');
    // The turn was not lost with the process: it is still running, and the new process answers it.
    expect((await es.admin.get(`${improvementsPath(p)}/${branchName}/conversation`)).body.status).toBe('running');
    es.llm.open(gate);

    const view = await settledBranch(es.admin, p, branchName, 60_000);
    expect(view.status).toBe('completed');
    expect(view.messages.map((m: any) => m.content)).toEqual([expect.any(String), 'Slow but sure']);
    expect((await es.admin.get(`${improvementsPath(p)}/${branchName}/diff`)).body.patch).toEqual([
      editPrompt(agent.id, 'Answer slowly.'),
    ]);
  });
});

describe('improvement branches over several agents', () => {
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
  });

  /** Three agents (the feedback concerns `focus`), a destination for agent.updated, and a branch whose assistant answers `patch`. */
  async function aProjectBranch(patch: (ids: { focus: string; helper: string; bystander: string }) => unknown[]) {
    const p = aProject();
    const focus = (await aStoredAgent(es.admin, p)).id;
    const helper = (await aStoredAgent(es.admin, p)).id;
    const bystander = (await aStoredAgent(es.admin, p)).id;
    const ids = { focus, helper, bystander };
    const dest = await createDestination(es.admin, p, { url: receiver.url, eventTypes: ['agent.updated'] });
    const marker = uniqueId('multi');
    es.llm.on(marker, { content: json({ reply: 'Edited two agents', patch: patch(ids) }) });
    const fb = await aFeedback(es.admin, p, {
      conversationId: 'conv-m',
      type: 'negative',
      details: marker,
      agentId: focus,
    });
    const { branchName } = (await es.admin.post(`${improvementsPath(p)}/trigger`, { feedbackIds: [fb.id] })).body;
    expect(await settledBranch(es.admin, p, branchName)).toMatchObject({ status: 'completed' });
    return { p, ids, dest, marker, branchName };
  }
  const twoEdits = ({ focus, helper }: { focus: string; helper: string }) => [
    { op: 'replace', path: `/agents/${focus}/prompt`, value: 'Be precise.' },
    { op: 'replace', path: `/agents/${helper}/subAgents/router/prompt`, value: 'Route to the writer.' },
  ];
  const updatesOf = (p: { projectId: string }, agentId: string) =>
    receiver.received.filter(
      (r) =>
        r.json?.type === 'agent.updated' && r.json?.projectId === p.projectId && r.json?.data?.agent?.id === agentId,
    );

  test('when the assistant edits two agents of the project, then the branch held them all, the diff shows both edits, and merge writes both and emits agent.updated for each', async () => {
    const { p, ids, dest, marker, branchName } = await aProjectBranch(twoEdits);
    // The branch copied every agent of the project: the assistant saw all three definitions.
    const asked = es.llm.received.find((r) => r.text.includes(marker))!.text;
    for (const id of Object.values(ids)) expect(asked).toContain(`"${id}":{"id":"${id}"`);

    const diff = (await es.admin.get(`${improvementsPath(p)}/${branchName}/diff`)).body;
    expect(diff).toMatchObject({
      agentId: ids.focus,
      agentIds: [ids.focus, ids.helper].sort(),
      hasChanges: true,
      liveMissing: false,
    });
    expect(diff.patch).toHaveLength(2);
    expect(diff.patch).toEqual(expect.arrayContaining(twoEdits(ids)));
    const bystanderBefore = await liveAgent(p, ids.bystander);

    expect((await es.admin.post(`${improvementsPath(p)}/${branchName}/merge`)).body).toEqual({
      branchName,
      status: 'merged',
    });
    expect((await liveAgent(p, ids.focus)).prompt).toBe('Be precise.');
    expect((await liveAgent(p, ids.helper)).subAgents.router.prompt).toBe('Route to the writer.');
    expect(await liveAgent(p, ids.bystander)).toEqual(bystanderBefore);

    const [focusUpdate] = await receiver.waitFor((r) => updatesOf(p, ids.focus).includes(r));
    const [helperUpdate] = await receiver.waitFor((r) => updatesOf(p, ids.helper).includes(r));
    expect(signatureValid(dest.secret, focusUpdate!)).toBe(true);
    expect(focusUpdate!.json).toMatchObject({
      type: 'agent.updated',
      tenantId: p.tenantId,
      projectId: p.projectId,
      agentId: ids.focus,
      data: {
        agent: { id: ids.focus, name: 'Support bot', subAgentIds: ['router', 'writer'] },
        change: { kind: 'definition', action: 'replaced', branchName },
      },
    });
    expect(helperUpdate!.json).toMatchObject({
      agentId: ids.helper,
      data: { change: { kind: 'definition', branchName } },
    });
    expect((await es.admin.get(`${improvementsPath(p)}/${branchName}/diff`)).body).toMatchObject({
      hasChanges: false,
      patch: [],
    });
    expect(updatesOf(p, ids.bystander)).toEqual([]);
  });

  test('when one of the changed agents changed live since the copy, then merge answers 409 and writes none of them', async () => {
    const { p, ids, branchName } = await aProjectBranch(twoEdits);
    // Someone changes the helper agent directly (an attachment), after the branch copied it.
    const attach = await es.admin.post(
      `${projectPath(p)}/agents/${ids.helper}/sub-agents/writer/external-agent-relations`,
      { externalAgentId: 'billing' },
    );
    expect(attach.status).toBe(201);
    const res = await es.admin.post(`${improvementsPath(p)}/${branchName}/merge`);
    expectProblem(res, 409);
    expect(res.body.detail).toContain(ids.helper);
    expect((await liveAgent(p, ids.focus)).prompt).toBe('Be helpful.');
    expect((await es.admin.get(`${improvementsPath(p)}/${branchName}/conversation`)).body.status).toBe('completed');
  });

  test('when a merge was interrupted after writing one agent, then the sweep finishes it without writing that agent twice', async () => {
    const { p, ids, branchName } = await aProjectBranch(twoEdits);
    const diff = (await es.admin.get(`${improvementsPath(p)}/${branchName}/diff`)).body;
    // The state a process killed between the two agents leaves: the decision recorded, the focus agent written
    // through management (with the branch key as its change id), the helper not yet.
    const key = `${p.tenantId}:${p.projectId}:${branchName}`;
    const focusLive = await liveAgent(p, ids.focus);
    const written = await requestSubject(es.natsUrl, replaceAgentDefinition.subject, {
      ...p,
      agentId: ids.focus,
      definition: { ...withoutTimes(focusLive), prompt: 'Be precise.' },
      expectedUpdatedAt: focusLive.updatedAt,
      changeId: key,
      branchName,
    });
    expect(written.ok).toBe(true);
    const view = (await es.admin.get(`${improvementsPath(p)}/${branchName}/conversation`)).body;
    await insertRaw('evals', 'improvementDecisions', {
      _id: key,
      ...p,
      branchName,
      decision: 'merged',
      resultSeq: 1,
      agentIds: diff.agentIds,
      at: new Date(Date.now() - 60_000),
      completedAt: null,
    });
    expect(view.status).toBe('completed');
    expect((await es.admin.get(`${improvementsPath(p)}/${branchName}/conversation`)).body.status).toBe('merging');

    const done = await eventually(
      async () => {
        const v = (await es.admin.get(`${improvementsPath(p)}/${branchName}/conversation`)).body;
        return v.status === 'merged' ? v : undefined;
      },
      'the sweep to finish the merge',
      30_000,
      100,
    );
    expect(done.statusMessage).toBeNull();
    expect((await liveAgent(p, ids.helper)).subAgents.router.prompt).toBe('Route to the writer.');
    await receiver.waitFor((r) => updatesOf(p, ids.helper).includes(r));
    // Merging again changes nothing: the branch is merged.
    expectProblem(await es.admin.post(`${improvementsPath(p)}/${branchName}/merge`), 409);
    // The focus agent was written once (by the interrupted merge): one event, not two.
    await receiver.waitFor((r) => updatesOf(p, ids.focus).includes(r));
    expect(updatesOf(p, ids.focus)).toHaveLength(1);
  });

  test('when the same replacement is sent twice with one change id, then management writes it once', async () => {
    const p = aProject();
    const agent = await aStoredAgent(es.admin, p);
    await createDestination(es.admin, p, { url: receiver.url, eventTypes: ['agent.updated'] });
    const live = await liveAgent(p, agent.id);
    const body = {
      ...p,
      agentId: agent.id,
      definition: { ...withoutTimes(live), prompt: 'Twice?' },
      expectedUpdatedAt: live.updatedAt,
      changeId: uniqueId('change'),
    };
    const first = await requestSubject(es.natsUrl, replaceAgentDefinition.subject, body);
    const second = await requestSubject(es.natsUrl, replaceAgentDefinition.subject, body);
    expect(first).toMatchObject({ ok: true, status: 200 });
    expect(second).toMatchObject({ ok: true, status: 200 });
    expect(second.body).toEqual(first.body);
    const other = await requestSubject(es.natsUrl, replaceAgentDefinition.subject, {
      ...body,
      changeId: uniqueId('change'),
    });
    expect(other).toMatchObject({ ok: false, problem: { status: 409 } });
    await receiver.waitFor((r) => updatesOf(p, agent.id).includes(r));
    expect((await liveAgent(p, agent.id)).prompt).toBe('Twice?');
    expect(updatesOf(p, agent.id)).toHaveLength(1);
  });
});
