import { aProject, aStoredAgent } from '@platform/testkit';
import { admin, stack } from '../support/stack';
import { expectProblem } from '../support/expect-problem';
import { aConversation, aFeedback, improvementsPath } from '../support/evals';

/** The shared stack has no LLM endpoint configured: branches are made, the assistant says it is not configured. */
describe('improvements without an assistant', () => {
  test('when the trigger body is invalid, then it answers 400 and creates no branch', async () => {
    const p = aProject();
    for (const body of [
      {},
      { feedbackIds: [] },
      { feedbackIds: 'fb' },
      { feedbackIds: ['bad id!'] },
      { feedbackIds: ['fb'], extra: true },
    ]) {
      expectProblem(await admin.post(`${improvementsPath(p)}/trigger`, body), 400);
    }
    expect((await admin.get(improvementsPath(p))).body).toEqual({ data: [] });
  });

  test('when feedback is unknown, names no agent or an agent that does not exist, then it answers 404 or 422', async () => {
    const p = aProject();
    const known = await aFeedback(admin, p, { conversationId: 'conv-x', type: 'negative' });
    const unknownAgent = await aFeedback(admin, p, {
      conversationId: 'conv-y',
      type: 'negative',
      agentId: 'agent-ghost',
    });
    const missing = await admin.post(`${improvementsPath(p)}/trigger`, { feedbackIds: [known.id, 'fb-missing'] });
    expectProblem(missing, 404);
    expect(missing.body.detail).toContain('fb-missing');
    expectProblem(await admin.post(`${improvementsPath(p)}/trigger`, { feedbackIds: [known.id] }), 422);
    expectProblem(await admin.post(`${improvementsPath(p)}/trigger`, { feedbackIds: [unknownAgent.id] }), 422);
    expect((await admin.get(improvementsPath(p))).body).toEqual({ data: [] });
  });

  test('when an improvement is triggered, then a branch exists whose status says the assistant is not configured', async () => {
    const p = aProject();
    const agent = await aStoredAgent(admin, p);
    await aConversation(stack.gatewayUrl, admin, p, 'conv-1', [{ type: 'message' }], agent.id);
    // The feedback carries no agentId: the agent comes from the conversation's events.
    const fb = await aFeedback(admin, p, { conversationId: 'conv-1', type: 'negative', details: 'too vague' });
    const res = await admin.post(`${improvementsPath(p)}/trigger`, {
      feedbackIds: [fb.id],
      additionalContext: 'customers want steps',
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      branchName: expect.stringMatching(new RegExp(`^improvement_${agent.id}_\\d{4}-\\d\\d-\\d\\dT`)),
      conversationId: expect.any(String),
    });
    const { branchName, conversationId } = res.body;
    expect(branchName).not.toMatch(/[:.]\d/);

    const view = await admin.get(`${improvementsPath(p)}/${branchName}/conversation`);
    expect(view.status).toBe(200);
    expect(view.body).toMatchObject({
      conversationIds: [conversationId],
      feedbackItems: [{ id: fb.id, type: 'negative', details: 'too vague', createdAt: expect.any(String) }],
      status: 'not_configured',
      statusMessage: expect.stringMatching(/not configured/),
    });
    expect(view.body.messages).toEqual([
      { role: 'user', content: expect.stringContaining('customers want steps'), createdAt: expect.any(String) },
    ]);

    const list = await admin.get(improvementsPath(p));
    expect(list.body.data).toEqual([
      { branchName, status: 'not_configured', updatedAt: expect.any(String), agentId: agent.id },
    ]);
    const diff = await admin.get(`${improvementsPath(p)}/${branchName}/diff`);
    expect(diff.body).toEqual({
      branchName,
      targetBranch: 'main',
      agentId: agent.id,
      agentIds: [],
      format: 'json-patch',
      hasChanges: false,
      patch: [],
      liveMissing: false,
    });

    const more = await admin.post(`${improvementsPath(p)}/${branchName}/continue`, { message: 'also be friendly' });
    expect(more.status).toBe(200);
    expect(more.body).toEqual({ conversationId });
    const after = await admin.get(`${improvementsPath(p)}/${branchName}/conversation`);
    expect(after.body.messages.map((m: any) => m.content)).toEqual([expect.any(String), 'also be friendly']);
    expectProblem(await admin.post(`${improvementsPath(p)}/${branchName}/continue`, { message: '' }), 400);
  });

  test('when a branch is rejected, then it cannot be continued, merged or rejected again', async () => {
    const p = aProject();
    const agent = await aStoredAgent(admin, p);
    const fb = await aFeedback(admin, p, { conversationId: 'conv-1', type: 'negative', agentId: agent.id });
    const { branchName } = (await admin.post(`${improvementsPath(p)}/trigger`, { feedbackIds: [fb.id] })).body;
    const rejected = await admin.post(`${improvementsPath(p)}/${branchName}/reject`);
    expect(rejected.status).toBe(200);
    expect(rejected.body).toEqual({ branchName, status: 'rejected' });
    expect((await admin.get(`${improvementsPath(p)}/${branchName}/conversation`)).body.status).toBe('rejected');
    expectProblem(await admin.post(`${improvementsPath(p)}/${branchName}/continue`, { message: 'more' }), 409);
    expectProblem(await admin.post(`${improvementsPath(p)}/${branchName}/merge`), 409);
    expectProblem(await admin.post(`${improvementsPath(p)}/${branchName}/reject`), 409);
    expect((await admin.get(`${improvementsPath(p)}/${branchName}/conversation`)).body.messages).toHaveLength(1);
  });

  test('when a branch is unknown or the name is not a branch name, then it answers 404 or 400', async () => {
    const p = aProject();
    expectProblem(await admin.get(`${improvementsPath(p)}/improvement_x_2026/conversation`), 404);
    expectProblem(await admin.get(`${improvementsPath(p)}/improvement_x_2026/diff`), 404);
    expectProblem(await admin.post(`${improvementsPath(p)}/improvement_x_2026/continue`, { message: 'hi' }), 404);
    expectProblem(await admin.get(`${improvementsPath(p)}/main/diff`), 400);
  });

  test('when a copilot conversation is recorded, then it answers with its id; a missing conversationId is a 400', async () => {
    const p = aProject();
    const res = await admin.post(`${improvementsPath(p)}/copilot-runs`, { conversationId: 'copilot-conv-1' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ conversationId: 'copilot-conv-1', id: expect.any(String) });
    expectProblem(await admin.post(`${improvementsPath(p)}/copilot-runs`, {}), 400);
  });
});
