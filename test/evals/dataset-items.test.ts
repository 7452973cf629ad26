import { adminClient, aProject, projectPath } from '@platform/testkit';
import { expectProblem } from '../support/expect-problem';

const admin = adminClient();
const itemsOf = (p: { tenantId: string; projectId: string }, datasetId: string) =>
  `${projectPath(p)}/evals/dataset-items/${datasetId}`;
const anItem = (text = 'How do I reset my password?') => ({
  input: { messages: [{ role: 'user', content: text }] },
  expectedOutput: [{ role: 'assistant', content: 'Use the reset link.' }],
});

describe('dataset items', () => {
  test('when an item is created, then it can be read back and is listed in its dataset only', async () => {
    const p = aProject();
    const res = await admin.post(`${itemsOf(p, 'ds-1')}/items`, anItem());
    expect(res.status).toBe(201);
    expect(res.body.data).toEqual({
      id: expect.any(String),
      datasetId: 'ds-1',
      input: { messages: [{ role: 'user', content: 'How do I reset my password?' }] },
      expectedOutput: [{ role: 'assistant', content: 'Use the reset link.' }],
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const read = await admin.get(`${itemsOf(p, 'ds-1')}/items/${res.body.data.id}`);
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual(res.body.data);
    const list = await admin.get(itemsOf(p, 'ds-1'));
    expect(list.body).toEqual({
      data: [res.body.data],
      pagination: { page: 1, limit: 10, total: 1, pages: 1, completedCount: 1 },
    });
    const other = await admin.get(itemsOf(p, 'ds-2'));
    expect(other.body.data).toEqual([]);
    const otherProject = await admin.get(`${itemsOf(aProject(), 'ds-1')}/items/${res.body.data.id}`);
    expectProblem(otherProject, 404);
  });

  test('when the body is invalid, then it answers 400 naming the field and stores nothing', async () => {
    const p = aProject();
    const cases: Array<[unknown, string]> = [
      [{}, '/input'],
      [{ input: { messages: [] } }, '/input/messages'],
      [{ input: { messages: [{ role: 'robot', content: 'x' }] } }, '/input/messages/0/role'],
      [{ ...anItem(), expectedOutput: 'yes' }, '/expectedOutput'],
      [{ ...anItem(), extra: 1 }, ''],
    ];
    for (const [body, pointer] of cases) {
      const res = await admin.post(`${itemsOf(p, 'ds')}/items`, body);
      expectProblem(res, 400, pointer || undefined);
    }
    expect((await admin.get(itemsOf(p, 'ds'))).body.pagination.total).toBe(0);
  });

  test('when an id is used twice in a dataset, then the second create answers 409', async () => {
    const p = aProject();
    expect((await admin.post(`${itemsOf(p, 'ds')}/items`, { id: 'item-1', ...anItem() })).status).toBe(201);
    expectProblem(await admin.post(`${itemsOf(p, 'ds')}/items`, { id: 'item-1', ...anItem('other') }), 409);
    expect((await admin.post(`${itemsOf(p, 'ds-other')}/items`, { id: 'item-1', ...anItem() })).status).toBe(201);
  });

  test('when a bulk create mixes valid and invalid items, then the valid ones are stored and each invalid one is reported', async () => {
    const p = aProject();
    const res = await admin.post(`${itemsOf(p, 'ds')}/items/bulk`, [
      anItem('a'),
      { input: 'nope' },
      anItem('c'),
      { id: 'bad id!', ...anItem() },
    ]);
    expect(res.status).toBe(201);
    expect(res.body.data.map((i: any) => i.input.messages[0].content)).toEqual(['a', 'c']);
    expect(res.body.pagination).toMatchObject({ total: 2 });
    expect(res.body.errors).toEqual([
      { index: 1, message: expect.stringContaining('/input') },
      { index: 3, message: expect.stringContaining('/id') },
    ]);
    const list = await admin.get(`${itemsOf(p, 'ds')}?limit=1&page=2`);
    expect(list.body.pagination).toEqual({ page: 2, limit: 1, total: 2, pages: 2, completedCount: 2 });
    expect(list.body.data).toHaveLength(1);
  });

  test('when no item of a bulk create is valid, then it answers 422 and stores nothing; an empty array is a 400', async () => {
    const p = aProject();
    expectProblem(await admin.post(`${itemsOf(p, 'ds')}/items/bulk`, [{}, { input: 1 }]), 422, '/0/input');
    expectProblem(await admin.post(`${itemsOf(p, 'ds')}/items/bulk`, []), 400);
    expectProblem(await admin.post(`${itemsOf(p, 'ds')}/items/bulk`, anItem()), 400);
    expect((await admin.get(itemsOf(p, 'ds'))).body.pagination.total).toBe(0);
  });

  test('when an item is updated and then deleted, then reads show the change and then 404', async () => {
    const p = aProject();
    const created = (await admin.post(`${itemsOf(p, 'ds')}/items`, anItem())).body.data;
    const patched = await admin.patch(`${itemsOf(p, 'ds')}/items/${created.id}`, { expectedOutput: null });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ id: created.id, input: created.input, expectedOutput: null });
    expectProblem(await admin.patch(`${itemsOf(p, 'ds')}/items/${created.id}`, {}), 400);
    expectProblem(await admin.patch(`${itemsOf(p, 'ds')}/items/missing`, { expectedOutput: null }), 404);
    const del = await admin.delete(`${itemsOf(p, 'ds')}/items/${created.id}`);
    expect(del.status).toBe(204);
    expectProblem(await admin.get(`${itemsOf(p, 'ds')}/items/${created.id}`), 404);
    expectProblem(await admin.delete(`${itemsOf(p, 'ds')}/items/${created.id}`), 404);
  });
});
