import { adminClient, aProject } from '@platform/testkit';
import { expectProblem } from '../support/expect-problem';
import { evaluatorsPath } from '../support/evals';

const admin = adminClient();

describe('evaluators', () => {
  test('when an evaluator of each kind is created, then each can be read back and listed', async () => {
    const p = aProject();
    const bodies = [
      {
        name: 'mentions refund',
        kind: 'contains',
        config: { value: 'refund', eventType: 'message', field: 'properties.text' },
      },
      { name: 'order number', kind: 'regex', config: { pattern: '#\\d{5}', flags: 'i' }, agentIds: ['agent-a'] },
      {
        name: 'rating shape',
        kind: 'json_schema',
        config: { schema: { type: 'object', required: ['rating'] }, eventType: 'rated' },
      },
      { name: 'no complaints', kind: 'negative_feedback' },
      {
        name: 'judge',
        kind: 'llm_judge',
        config: {
          prompt: 'Rate helpfulness 1-5 as {"score": n}',
          passCriteria: { operator: 'and', conditions: [{ field: 'score', operator: '>=', value: 4 }] },
        },
      },
    ];
    const created = [];
    for (const body of bodies) {
      const res = await admin.post(evaluatorsPath(p), body);
      expect(res.status).toBe(201);
      expect(res.body.data).toMatchObject({
        id: expect.any(String),
        name: body.name,
        kind: body.kind,
        agentIds: body.agentIds ?? [],
        description: null,
      });
      created.push(res.body.data);
    }
    expect(created[3].config).toEqual({});
    const read = await admin.get(`${evaluatorsPath(p)}/${created[2].id}`);
    expect(read.body.data).toEqual(created[2]);
    const list = await admin.get(`${evaluatorsPath(p)}?limit=100`);
    expect(list.body.pagination.total).toBe(5);
    expect(list.body.data.map((e: any) => e.id).sort()).toEqual(created.map((e) => e.id).sort());
    expectProblem(await admin.get(`${evaluatorsPath(aProject())}/${created[0].id}`), 404);
  });

  test('when the kind or its config is wrong, then it answers 400 or 422 naming the field and stores nothing', async () => {
    const p = aProject();
    expectProblem(
      await admin.post(evaluatorsPath(p), { name: 'x', kind: 'contains', config: {} }),
      400,
      '/config/value',
    );
    expectProblem(
      await admin.post(evaluatorsPath(p), { name: 'x', kind: 'contains', config: { value: 'a', bogus: 1 } }),
      400,
    );
    expectProblem(await admin.post(evaluatorsPath(p), { name: '', kind: 'negative_feedback' }), 400, '/name');
    expectProblem(await admin.post(evaluatorsPath(p), { name: 'x', kind: 'telepathy', config: {} }), 422);
    expectProblem(
      await admin.post(evaluatorsPath(p), { name: 'x', kind: 'regex', config: { pattern: '(' } }),
      422,
      '/config/pattern',
    );
    expectProblem(
      await admin.post(evaluatorsPath(p), { name: 'x', kind: 'json_schema', config: { schema: { type: 'nonsense' } } }),
      422,
      '/config/schema',
    );
    expectProblem(
      await admin.post(evaluatorsPath(p), {
        name: 'x',
        kind: 'llm_judge',
        config: { prompt: 'p', passCriteria: { operator: 'xor', conditions: [] } },
      }),
      400,
    );
    expect((await admin.get(evaluatorsPath(p))).body.pagination.total).toBe(0);
  });

  test('when an evaluator is changed, then the new config is checked against its kind; after delete it is gone', async () => {
    const p = aProject();
    const e = (
      await admin.post(evaluatorsPath(p), { id: 'ev-1', name: 'refund', kind: 'contains', config: { value: 'refund' } })
    ).body.data;
    expectProblem(await admin.post(evaluatorsPath(p), { id: 'ev-1', name: 'again', kind: 'negative_feedback' }), 409);
    const changed = await admin.patch(`${evaluatorsPath(p)}/ev-1`, {
      name: 'refunds',
      config: { value: 'money back', expect: 'absent' },
      agentIds: ['agent-b'],
    });
    expect(changed.status).toBe(200);
    expect(changed.body.data).toMatchObject({
      id: 'ev-1',
      name: 'refunds',
      kind: 'contains',
      config: { value: 'money back', expect: 'absent' },
      agentIds: ['agent-b'],
      createdAt: e.createdAt,
    });
    expectProblem(await admin.patch(`${evaluatorsPath(p)}/ev-1`, { config: { pattern: 'x' } }), 400, '/config');
    expectProblem(await admin.patch(`${evaluatorsPath(p)}/ev-1`, { kind: 'regex' }), 400);
    expect((await admin.get(`${evaluatorsPath(p)}/ev-1`)).body.data).toEqual(changed.body.data);
    expect((await admin.delete(`${evaluatorsPath(p)}/ev-1`)).status).toBe(204);
    expectProblem(await admin.get(`${evaluatorsPath(p)}/ev-1`), 404);
    expectProblem(await admin.patch(`${evaluatorsPath(p)}/ev-1`, { name: 'x' }), 404);
  });
  test("when two tenants' JSON Schemas use the same $id, then each tenant's evaluator is accepted and checks with its own schema", async () => {
    const a = aProject();
    const b = aProject();
    const $id = 'https://schemas.example.com/rating.json';
    const ofA = {
      name: 'a',
      kind: 'json_schema',
      config: { schema: { $id, type: 'object', required: ['rating'] }, eventType: 'rated' },
    };
    const ofB = {
      name: 'b',
      kind: 'json_schema',
      config: { schema: { $id, type: 'object', required: ['stars'] }, eventType: 'rated' },
    };
    expect((await admin.post(evaluatorsPath(a), ofA)).status).toBe(201);
    const second = await admin.post(evaluatorsPath(b), ofB);
    expect({ status: second.status, detail: second.body?.detail }).toEqual({ status: 201, detail: undefined });
    // The same tenant may use the same $id again (the check of a schema keeps nothing registered).
    expect((await admin.post(evaluatorsPath(a), { ...ofA, name: 'a2' })).status).toBe(201);
    expect((await admin.get(evaluatorsPath(b))).body.data[0].config.schema.required).toEqual(['stars']);
  });
});
