import { aProject } from '@platform/testkit';
import { admin, stack } from '../support/stack';
import { expectProblem } from '../support/expect-problem';
import { aConversation, anEvaluator, evalsPath, evaluatorsPath, finishedRun, resultsOf } from '../support/evals';

/**
 * One tenant's regular expression cannot stall every tenant's evaluations (issue 54, finding 4): patterns run on a
 * linear-time engine (RE2), and what it cannot run is refused when the evaluator is created.
 */

describe('evaluator regular expressions', () => {
  test("when a tenant evaluates with the catastrophic pattern ^(a+)+$, then its run completes with a result and another tenant's evaluation started meanwhile completes too", async () => {
    const slow = aProject();
    const other = aProject();
    // 40 a's and a b: a backtracking engine tries about 2^40 ways to split the a's before it gives up.
    await aConversation(stack.gatewayUrl, admin, slow, 'conv-evil', [
      { type: 'message', properties: { text: `${'a'.repeat(40)}b` } },
    ]);
    await aConversation(stack.gatewayUrl, admin, other, 'conv-fine', [
      { type: 'message', properties: { text: 'order #12345' } },
    ]);
    const evil = await anEvaluator(admin, slow, {
      kind: 'regex',
      config: { pattern: '^(a+)+$', eventType: 'message', field: 'properties.text' },
    });
    const fine = await anEvaluator(admin, other, {
      kind: 'regex',
      config: { pattern: '#\\d{5}', eventType: 'message', field: 'properties.text' },
    });

    const started = await admin.post(`${evalsPath(slow)}/evaluate-conversations`, {
      conversationIds: ['conv-evil'],
      evaluatorIds: [evil.id],
    });
    expect(started.status).toBe(202);
    const meanwhile = await admin.post(`${evalsPath(other)}/evaluate-conversations`, {
      conversationIds: ['conv-fine'],
      evaluatorIds: [fine.id],
    });
    expect(meanwhile.status).toBe(202);

    const otherRun = await finishedRun(admin, other, meanwhile.body.evaluationRunId, 20_000);
    expect(otherRun).toMatchObject({ status: 'completed', passedItems: 1 });
    const slowRun = await finishedRun(admin, slow, started.body.evaluationRunId, 20_000);
    expect(slowRun).toMatchObject({ status: 'completed', failedItems: 1, errorItems: 0 });
    const [result] = await resultsOf(admin, slow, started.body.evaluationRunId);
    expect(result).toMatchObject({
      verdict: 'failed',
      failedConditions: [expect.objectContaining({ operator: 'matches', value: '^(a+)+$' })],
    });
  });

  test('when a pattern needs backtracking features (lookaround, backreferences), then create and update answer 422 with the pointer and store nothing', async () => {
    const p = aProject();
    for (const pattern of ['(?=a)b', '(a)\\1', 'x(?<!y)']) {
      expectProblem(
        await admin.post(evaluatorsPath(p), { id: 'ev-bad', name: 'x', kind: 'regex', config: { pattern } }),
        422,
        '/config/pattern',
      );
    }
    expect((await admin.get(evaluatorsPath(p))).body.data).toEqual([]);
    await anEvaluator(admin, p, { id: 'ev-ok', kind: 'regex', config: { pattern: 'ok', flags: 'ims' } });
    expectProblem(
      await admin.patch(`${evaluatorsPath(p)}/ev-ok`, { config: { pattern: '(?=a)' } }),
      422,
      '/config/pattern',
    );
    expect((await admin.get(`${evaluatorsPath(p)}/ev-ok`)).body.data.config).toMatchObject({ pattern: 'ok' });
  });
});
