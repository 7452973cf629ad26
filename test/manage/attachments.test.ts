import {
  aFullAgent,
  aProject,
  aStoredAgent,
  aStoredSkill,
  aTenantToken,
  client,
  collectEvents,
  eventually,
  internalRequest,
  projectPath,
} from '@platform/testkit';
import { admin, stack } from '../support/stack';
import { agentUpdated, eventFilter, getAgentDefinition } from '@platform/contracts';

const anonymous = client(stack.gatewayUrl);

type P = { tenantId: string; projectId: string };
const pa = (p: P, agentId: string) => `${projectPath(p)}/agents/${agentId}`;
const definition = async (p: P, agentId: string) =>
  (await internalRequest(getAgentDefinition.subject, { ...p, agentId })).body;

async function setup() {
  const p = aProject();
  const agent = await aStoredAgent(admin, p);
  return { p, agent, base: pa(p, agent.id) };
}

function expectProblem(res: { status: number; contentType: string; body: any }, status: number, pointer?: string) {
  expect(res.status).toBe(status);
  expect(res.contentType).toMatch(/application\/problem\+json/);
  if (pointer !== undefined) expect(res.body.errors.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
}

describe('external agent relations', () => {
  test('when an external agent is related, then it can be read, listed, changed and removed', async () => {
    const { p, agent, base } = await setup();
    const url = `${base}/sub-agents/router/external-agent-relations`;
    const created = await admin.post(url, { externalAgentId: 'billing', headers: { 'X-Tenant': 'acme' } });
    expect(created.status).toBe(201);
    const rel = created.body.data;
    expect(rel).toEqual({
      id: expect.any(String),
      subAgentId: 'router',
      externalAgentId: 'billing',
      headers: { 'X-Tenant': 'acme' },
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });

    expect((await admin.get(`${url}/${rel.id}`)).body).toEqual({ data: rel });
    const list = await admin.get(url);
    expect(list.status).toBe(200);
    expect(list.body).toEqual({
      data: [rel],
      pagination: { page: 1, limit: 10, total: 1, pages: 1, completedCount: 1 },
    });
    expect((await definition(p, agent.id)).subAgents.router.canDelegateTo).toEqual(['writer', 'billing']);

    const patched = await admin.patch(`${url}/${rel.id}`, { headers: { 'X-Tenant': 'globex' } });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({
      id: rel.id,
      headers: { 'X-Tenant': 'globex' },
      createdAt: rel.createdAt,
    });
    expect((await admin.get(`${url}/${rel.id}`)).body.data.headers).toEqual({ 'X-Tenant': 'globex' });

    const moved = await admin.patch(`${url}/${rel.id}`, { subAgentId: 'writer', id: 'rel-billing' });
    expect(moved.body.data).toMatchObject({ id: 'rel-billing', subAgentId: 'writer' });
    expect((await admin.get(`${base}/sub-agents/writer/external-agent-relations/rel-billing`)).status).toBe(200);
    expect((await admin.get(`${url}/${rel.id}`)).status).toBe(404);

    const removed = await admin.delete(`${base}/sub-agents/writer/external-agent-relations/rel-billing`);
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ message: expect.any(String), removed: true });
    expect((await admin.get(`${base}/sub-agents/writer/external-agent-relations/rel-billing`)).status).toBe(404);
    expect((await admin.delete(`${base}/sub-agents/writer/external-agent-relations/rel-billing`)).status).toBe(404);
  });

  test.each([
    ['externalAgentId is missing', {}, '/externalAgentId'],
    ['externalAgentId is not a RID', { externalAgentId: 'a b' }, '/externalAgentId'],
    [
      'a header name is reserved',
      { externalAgentId: 'billing', headers: { 'Transfer-Encoding': 'chunked' } },
      '/headers/Transfer-Encoding',
    ],
    ['a header name is not a token', { externalAgentId: 'billing', headers: { 'X Bad': 'v' } }, '/headers/X Bad'],
    [
      'a header value is longer than 1000',
      { externalAgentId: 'billing', headers: { 'X-Long': 'v'.repeat(1001) } },
      '/headers/X-Long',
    ],
    [
      'a header name is longer than 128',
      { externalAgentId: 'billing', headers: { ['X'.repeat(129)]: 'v' } },
      `/headers/${'X'.repeat(129)}`,
    ],
    ['createdAt is not a date-time', { externalAgentId: 'billing', createdAt: 'yesterday' }, '/createdAt'],
    ['a field is unknown', { externalAgentId: 'billing', colour: 'red' }, ''],
  ])('when %s, then it answers 400 and relates nothing', async (_what, body, pointer) => {
    const { base } = await setup();
    const url = `${base}/sub-agents/router/external-agent-relations`;
    expectProblem(await admin.post(url, body), 400, pointer);
    expect((await admin.get(url)).body.pagination.total).toBe(0);
  });

  test('when the sub-agent, the external agent or the agent is unknown, then it answers 404; a second relation of the same pair is 409', async () => {
    const { p, base } = await setup();
    expectProblem(
      await admin.post(`${base}/sub-agents/ghost/external-agent-relations`, { externalAgentId: 'billing' }),
      404,
    );
    expectProblem(
      await admin.post(`${base}/sub-agents/router/external-agent-relations`, { externalAgentId: 'ghost' }),
      404,
    );
    expectProblem(
      await admin.post(`${pa(p, 'ghost-agent')}/sub-agents/router/external-agent-relations`, {
        externalAgentId: 'billing',
      }),
      404,
    );
    expect(
      (await admin.post(`${base}/sub-agents/router/external-agent-relations`, { externalAgentId: 'billing' })).status,
    ).toBe(201);
    expectProblem(
      await admin.post(`${base}/sub-agents/router/external-agent-relations`, { externalAgentId: 'billing' }),
      409,
    );
    expect((await admin.get(`${base}/sub-agents/router/external-agent-relations`)).body.pagination.total).toBe(1);
  });

  test('when a patch names an unknown sub-agent, then it answers 404 and changes nothing', async () => {
    const { base } = await setup();
    const url = `${base}/sub-agents/router/external-agent-relations`;
    const rel = (await admin.post(url, { externalAgentId: 'billing' })).body.data;
    expectProblem(await admin.patch(`${url}/${rel.id}`, { subAgentId: 'ghost' }), 404);
    expectProblem(await admin.patch(`${url}/${rel.id}`, { headers: { Upgrade: 'h2' } }), 400, '/headers/Upgrade');
    expect((await admin.get(`${url}/${rel.id}`)).body.data).toEqual(rel);
  });

  test('when the list is paged, then page and limit bounds are enforced and pages are cut', async () => {
    const { base } = await setup();
    const url = `${base}/sub-agents/router/external-agent-relations`;
    expectProblem(await admin.get(`${url}?page=0`), 400, '#query/page');
    expectProblem(await admin.get(`${url}?limit=0`), 400, '#query/limit');
    expectProblem(await admin.get(`${url}?limit=101`), 400, '#query/limit');
    expect((await admin.get(`${url}?limit=100`)).status).toBe(200);
    await admin.post(url, { externalAgentId: 'billing' });
    const page2 = await admin.get(`${url}?page=2&limit=1`);
    expect(page2.body).toEqual({ data: [], pagination: { page: 2, limit: 1, total: 1, pages: 1, completedCount: 1 } });
  });
});

describe('sub-agent skills', () => {
  test('when skills are attached, then the sub-agent lists them in index order with the skill fields, and detaching removes them', async () => {
    const { p, agent, base } = await setup();
    const s1 = await aStoredSkill(admin, p);
    const s2 = await aStoredSkill(admin, p);
    const first = await admin.post(`${base}/sub-agent-skills`, {
      agentId: agent.id,
      skillId: s1.id,
      subAgentId: 'writer',
      index: 2,
    });
    expect(first.status).toBe(201);
    expect(first.body.data).toEqual({
      id: expect.any(String),
      subAgentId: 'writer',
      skillId: s1.id,
      index: 2,
      alwaysLoaded: false,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const second = await admin.post(`${base}/sub-agent-skills`, {
      agentId: agent.id,
      skillId: s2.id,
      subAgentId: 'writer',
      index: 0,
      alwaysLoaded: true,
    });
    expect(second.status).toBe(201);

    const list = await admin.get(`${base}/sub-agent-skills/agent/writer`);
    expect(list.status).toBe(200);
    const { files: _f, ...s2Fields } = s2;
    expect(list.body.data[0]).toEqual({
      ...s2Fields,
      alwaysLoaded: true,
      index: 0,
      subAgentId: 'writer',
      subAgentSkillId: second.body.data.id,
    });
    expect(list.body.data.map((s: { id: string }) => s.id)).toEqual([s2.id, s1.id]);
    expect((await definition(p, agent.id)).subAgents.writer.skills).toEqual([
      { id: s2.id, index: 0, alwaysLoaded: true },
      { id: s1.id, index: 2, alwaysLoaded: false },
    ]);

    const del = await admin.delete(`${base}/sub-agent-skills/agent/writer/skill/${s1.id}`);
    expect(del.status).toBe(204);
    expect(del.body).toBeUndefined();
    expect(
      (await admin.get(`${base}/sub-agent-skills/agent/writer`)).body.data.map((s: { id: string }) => s.id),
    ).toEqual([s2.id]);
    expectProblem(await admin.delete(`${base}/sub-agent-skills/agent/writer/skill/${s1.id}`), 404);
  });

  test.each([
    ['index is negative', { index: -1 }, '/index'],
    ['index is not an integer', { index: 1.5 }, '/index'],
    ['index is missing', { index: undefined }, '/index'],
    ['agentId is longer than 256', { agentId: 'a'.repeat(257) }, '/agentId'],
    ['skillId is not a RID', { skillId: 'no way' }, '/skillId'],
    ['subAgentId is missing', { subAgentId: undefined }, '/subAgentId'],
    ['alwaysLoaded is not a boolean', { alwaysLoaded: 'yes' }, '/alwaysLoaded'],
    ['agentId names another agent', { agentId: 'other-agent' }, '/agentId'],
  ])('when %s, then it answers 400 and attaches nothing', async (_what, change, pointer) => {
    const { p, agent, base } = await setup();
    const skill = await aStoredSkill(admin, p);
    const res = await admin.post(`${base}/sub-agent-skills`, {
      agentId: agent.id,
      skillId: skill.id,
      subAgentId: 'writer',
      index: 0,
      ...change,
    });
    expectProblem(res, 400, pointer);
    expect((await admin.get(`${base}/sub-agent-skills/agent/writer`)).body.data).toEqual([]);
  });

  test('when the skill or sub-agent is unknown, then it answers 404; the same skill twice is 409; an attached skill cannot be deleted', async () => {
    const { p, agent, base } = await setup();
    const skill = await aStoredSkill(admin, p);
    expectProblem(
      await admin.post(`${base}/sub-agent-skills`, {
        agentId: agent.id,
        skillId: 'ghost',
        subAgentId: 'writer',
        index: 0,
      }),
      404,
    );
    expectProblem(
      await admin.post(`${base}/sub-agent-skills`, {
        agentId: agent.id,
        skillId: skill.id,
        subAgentId: 'ghost',
        index: 0,
      }),
      404,
    );
    expectProblem(await admin.get(`${base}/sub-agent-skills/agent/ghost`), 404);
    expect(
      (
        await admin.post(`${base}/sub-agent-skills`, {
          agentId: agent.id,
          skillId: skill.id,
          subAgentId: 'writer',
          index: 0,
        })
      ).status,
    ).toBe(201);
    expectProblem(
      await admin.post(`${base}/sub-agent-skills`, {
        agentId: agent.id,
        skillId: skill.id,
        subAgentId: 'writer',
        index: 1,
      }),
      409,
    );
    expect((await admin.get(`${base}/sub-agent-skills/agent/writer`)).body.data).toHaveLength(1);

    expectProblem(await admin.delete(`${projectPath(p)}/skills/${skill.id}`), 409);
    expect((await admin.get(`${projectPath(p)}/skills/${skill.id}`)).status).toBe(200);
    expect((await admin.delete(`${base}/sub-agent-skills/agent/writer/skill/${skill.id}`)).status).toBe(204);
    expect((await admin.delete(`${projectPath(p)}/skills/${skill.id}`)).status).toBe(204);
  });
});

describe('sub-agent tool relations', () => {
  test('when a tool relation is created, then it can be read, listed, filtered, listed by tool, changed and removed', async () => {
    const { p, agent, base } = await setup();
    const url = `${base}/sub-agent-tool-relations`;
    const created = await admin.post(url, {
      id: 'rel-1',
      subAgentId: 'writer',
      toolId: 'search',
      headers: { 'X-Key': 'k' },
      selectedTools: ['find'],
      toolPolicies: { find: { needsApproval: true } },
    });
    expect(created.status).toBe(201);
    const rel = created.body.data;
    expect(rel).toEqual({
      id: 'rel-1',
      subAgentId: 'writer',
      toolId: 'search',
      headers: { 'X-Key': 'k' },
      selectedTools: ['find'],
      toolPolicies: { find: { needsApproval: true } },
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    await admin.post(url, { id: 'rel-2', subAgentId: 'router', toolId: 'search' });

    expect((await admin.get(`${url}/rel-1`)).body).toEqual({ data: rel });
    const all = await admin.get(url);
    expect(all.body.pagination).toEqual({ page: 1, limit: 10, total: 2, pages: 1, completedCount: 2 });
    expect((await admin.get(`${url}?subAgentId=writer`)).body.data).toEqual([rel]);
    expect((await admin.get(`${url}?toolId=ghost`)).body.data).toEqual([]);
    const byTool = await admin.get(`${url}/tool/search/sub-agents?limit=1`);
    expect(byTool.status).toBe(200);
    expect(byTool.body.data).toEqual([rel]);
    expect(byTool.body.pagination).toEqual({ page: 1, limit: 1, total: 2, pages: 2, completedCount: 1 });
    expect((await definition(p, agent.id)).subAgents.writer.canUse).toEqual([
      {
        toolId: 'search',
        agentToolRelationId: 'rel-1',
        headers: { 'X-Key': 'k' },
        toolPolicies: { find: { needsApproval: true } },
        toolSelection: ['find'],
      },
    ]);

    const patched = await admin.patch(`${url}/rel-1`, {
      selectedTools: null,
      toolPolicies: { find: { needsApproval: false } },
    });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({
      id: 'rel-1',
      selectedTools: null,
      toolPolicies: { find: { needsApproval: false } },
      headers: { 'X-Key': 'k' },
    });
    expect((await admin.get(`${url}/rel-1`)).body.data).toEqual(patched.body.data);

    expect((await admin.delete(`${url}/rel-1`)).status).toBe(204);
    expectProblem(await admin.get(`${url}/rel-1`), 404);
  });

  test.each([
    ['id is missing', { id: undefined }, '/id'],
    ['toolId is missing', { toolId: undefined }, '/toolId'],
    ['subAgentId is not a RID', { subAgentId: 'a/b' }, '/subAgentId'],
    ['selectedTools is not an array', { selectedTools: 'find' }, '/selectedTools'],
    ['a tool policy is not an object', { toolPolicies: { find: true } }, '/toolPolicies/find'],
    ['a header is reserved', { headers: { 'Content-Length': '1' } }, '/headers/Content-Length'],
  ])('when %s, then it answers 400 and stores nothing', async (_what, change, pointer) => {
    const { base } = await setup();
    const url = `${base}/sub-agent-tool-relations`;
    expectProblem(
      await admin.post(url, { id: 'rel-x', subAgentId: 'writer', toolId: 'search', ...change }),
      400,
      pointer,
    );
    expect((await admin.get(url)).body.pagination.total).toBe(0);
  });

  test('when the tool or sub-agent is unknown, then it answers 404; a taken id or a used pair is 409', async () => {
    const { base } = await setup();
    const url = `${base}/sub-agent-tool-relations`;
    expectProblem(await admin.post(url, { id: 'r', subAgentId: 'writer', toolId: 'ghost' }), 404);
    expectProblem(await admin.post(url, { id: 'r', subAgentId: 'ghost', toolId: 'search' }), 404);
    expect((await admin.post(url, { id: 'r', subAgentId: 'writer', toolId: 'search' })).status).toBe(201);
    expectProblem(await admin.post(url, { id: 'r', subAgentId: 'router', toolId: 'search' }), 409);
    expectProblem(await admin.post(url, { id: 'r2', subAgentId: 'writer', toolId: 'search' }), 409);
    expectProblem(await admin.patch(`${url}/r`, { toolId: 'ghost' }), 404);
    expectProblem(await admin.patch(`${url}/ghost`, { headers: {} }), 404);
    expect((await admin.get(url)).body.data.map((r: { id: string }) => r.id)).toEqual(['r']);
  });

  test('when the list is paged, then page and limit bounds are enforced', async () => {
    const { base } = await setup();
    for (const q of ['page=0', 'limit=0', 'limit=101', 'page=x']) {
      expectProblem(await admin.get(`${base}/sub-agent-tool-relations?${q}`), 400);
      expectProblem(await admin.get(`${base}/sub-agent-tool-relations/tool/search/sub-agents?${q}`), 400);
    }
  });
});

describe.each([
  ['data', 'sub-agent-data-components', 'dataComponentId'],
  ['artifact', 'sub-agent-artifact-components', 'artifactComponentId'],
] as const)('sub-agent %s components', (_kind, segment, field) => {
  test('when a component is attached, then it is listed, exists, shows in the reverse listing, and is removed with {message, removed}', async () => {
    const { p, agent, base } = await setup();
    const url = `${base}/${segment}`;
    const res = await admin.post(url, { agentId: agent.id, [field]: 'chart', subAgentId: 'writer' });
    expect(res.status).toBe(201);
    expect(res.body.data).toEqual({
      id: expect.any(String),
      subAgentId: 'writer',
      [field]: 'chart',
      createdAt: expect.any(String),
    });

    const list = await admin.get(`${url}/agent/writer`);
    expect(list.body).toEqual({
      data: [
        {
          id: 'chart',
          name: null,
          description: null,
          props: null,
          render: null,
          createdAt: res.body.data.createdAt,
          updatedAt: res.body.data.createdAt,
        },
      ],
    });
    expect((await admin.get(`${url}/agent/router`)).body).toEqual({ data: [] });
    expect((await admin.get(`${url}/agent/writer/component/chart/exists`)).body).toEqual({ exists: true });
    expect((await admin.get(`${url}/agent/router/component/chart/exists`)).body).toEqual({ exists: false });
    expect((await admin.get(`${url}/component/chart/agents`)).body).toEqual({
      data: [{ createdAt: res.body.data.createdAt, subAgentId: 'writer' }],
    });
    const key = field === 'dataComponentId' ? 'dataComponents' : 'artifactComponents';
    expect((await definition(p, agent.id)).subAgents.writer[key]).toEqual(['chart']);

    const removed = await admin.delete(`${url}/agent/writer/component/chart`);
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ message: expect.any(String), removed: true });
    expect((await admin.get(`${url}/agent/writer/component/chart/exists`)).body).toEqual({ exists: false });
    expectProblem(await admin.delete(`${url}/agent/writer/component/chart`), 404);
  });

  test('when the component is already attached, then it answers 409 with the legacy error body and keeps one attachment', async () => {
    const { agent, base } = await setup();
    const url = `${base}/${segment}`;
    expect((await admin.post(url, { agentId: agent.id, [field]: 'chart', subAgentId: 'writer' })).status).toBe(201);
    const again = await admin.post(url, { agentId: agent.id, [field]: 'chart', subAgentId: 'writer' });
    expect(again.status).toBe(409);
    expect(again.contentType).toMatch(/^application\/json/);
    expect(again.body).toEqual({
      details: null,
      error: 'conflict',
      message: expect.stringContaining('already attached'),
    });
    expect((await admin.get(`${url}/component/chart/agents`)).body.data).toHaveLength(1);
  });

  test.each([
    ['agentId is missing', { agentId: undefined }, '/agentId'],
    ['agentId is longer than 256', { agentId: 'a'.repeat(257) }, '/agentId'],
    [`${field} is missing`, { [field]: undefined }, `/${field}`],
    [`${field} is too long`, { [field]: 'c'.repeat(257) }, `/${field}`],
    ['subAgentId is missing', { subAgentId: undefined }, '/subAgentId'],
    ['agentId names another agent', { agentId: 'other' }, '/agentId'],
  ])('when %s, then it answers 400 problem+json and attaches nothing', async (_what, change, pointer) => {
    const { agent, base } = await setup();
    const url = `${base}/${segment}`;
    expectProblem(
      await admin.post(url, {
        agentId: agent.id,
        [field]: 'chart',
        subAgentId: 'writer',
        ...(change as Record<string, unknown>),
      }),
      400,
      pointer,
    );
    expect((await admin.get(`${url}/agent/writer`)).body.data).toEqual([]);
  });

  test('when the sub-agent or the agent is unknown, then attach, list, exists and remove answer 404 problem+json', async () => {
    const { p, agent, base } = await setup();
    const url = `${base}/${segment}`;
    expectProblem(await admin.post(url, { agentId: agent.id, [field]: 'chart', subAgentId: 'ghost' }), 404);
    expectProblem(await admin.get(`${url}/agent/ghost`), 404);
    expectProblem(await admin.get(`${url}/agent/ghost/component/chart/exists`), 404);
    expectProblem(await admin.delete(`${url}/agent/ghost/component/chart`), 404);
    expectProblem(await admin.get(`${pa(p, 'ghost-agent')}/${segment}/component/chart/agents`), 404);
  });
});

describe('sub-agent function tools', () => {
  test('when a function tool is attached, then it is listed with its definition, exists, shows in the reverse listing, and is removed', async () => {
    const { p, agent, base } = await setup();
    const url = `${base}/sub-agent-function-tools`;
    const res = await admin.post(url, {
      functionToolId: 'sum',
      subAgentId: 'writer',
      toolPolicies: { sum: { needsApproval: true } },
    });
    expect(res.status).toBe(201);
    const att = res.body.data;
    expect(att).toEqual({
      id: expect.any(String),
      subAgentId: 'writer',
      functionToolId: 'sum',
      toolPolicies: { sum: { needsApproval: true } },
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });

    const list = await admin.get(`${url}/sub-agent/writer`);
    expect(list.status).toBe(200);
    expect(list.body).toEqual({
      data: [
        {
          id: 'sum',
          name: 'Sum',
          description: 'Adds',
          functionId: 'fn-sum',
          agentId: agent.id,
          relationshipId: att.id,
          createdAt: att.createdAt,
          updatedAt: att.updatedAt,
        },
      ],
      pagination: { page: 1, limit: 10, total: 1, pages: 1, completedCount: 1 },
    });
    expectProblem(await admin.get(`${url}/sub-agent/writer?limit=101`), 400, '#query/limit');
    expect((await admin.get(`${url}/function-tool/sum/sub-agents`)).body).toEqual({
      data: [{ createdAt: att.createdAt, subAgentId: 'writer' }],
    });
    expect((await admin.get(`${url}/sub-agent/writer/function-tool/sum/exists`)).body).toEqual({ exists: true });
    expect((await definition(p, agent.id)).subAgents.writer.canUse).toEqual([
      { toolId: 'sum', agentToolRelationId: att.id, toolPolicies: { sum: { needsApproval: true } } },
    ]);

    const removed = await admin.delete(`${url}/sub-agent/writer/function-tool/sum`);
    expect(removed.body).toEqual({ message: expect.any(String), removed: true });
    expect((await admin.get(`${url}/sub-agent/writer/function-tool/sum/exists`)).body).toEqual({ exists: false });
    expectProblem(await admin.delete(`${url}/sub-agent/writer/function-tool/sum`), 404);
  });

  test('when it is attached twice, then 409 carries the legacy body; unknown function tools and sub-agents are 404 problems; bad bodies 400', async () => {
    const { base } = await setup();
    const url = `${base}/sub-agent-function-tools`;
    expect((await admin.post(url, { functionToolId: 'sum', subAgentId: 'writer' })).status).toBe(201);
    const again = await admin.post(url, { functionToolId: 'sum', subAgentId: 'writer' });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ details: null, error: 'conflict', message: expect.any(String) });
    expectProblem(await admin.post(url, { functionToolId: 'ghost', subAgentId: 'writer' }), 404);
    expectProblem(await admin.post(url, { functionToolId: 'sum', subAgentId: 'ghost' }), 404);
    expectProblem(await admin.post(url, { subAgentId: 'writer' }), 400, '/functionToolId');
    expectProblem(
      await admin.post(url, {
        functionToolId: 'sum',
        subAgentId: 'router',
        toolPolicies: { sum: { needsApproval: 'yes' } },
      }),
      400,
      '/toolPolicies/sum/needsApproval',
    );
    expect((await admin.get(`${url}/function-tool/sum/sub-agents`)).body.data).toHaveLength(1);
  });
});

describe('attachments declared in the definition', () => {
  test('when the definition declares attachments, then the attachment listings show them', async () => {
    const p = aProject();
    const skill = await aStoredSkill(admin, p);
    const input = aFullAgent();
    input.subAgents.writer = {
      ...input.subAgents.writer,
      canUse: [{ toolId: 'search', agentToolRelationId: 'rel-w' }, { toolId: 'sum' }],
      dataComponents: ['chart'],
      artifactComponents: ['doc'],
      skills: [{ id: skill.id, index: 1 }],
      canDelegateTo: ['billing'],
    } as any;
    expect((await admin.post(`${projectPath(p)}/agent`, input)).status).toBe(201);
    const base = pa(p, input.id);
    expect((await admin.get(`${base}/sub-agent-tool-relations/rel-w`)).body.data).toMatchObject({
      subAgentId: 'writer',
      toolId: 'search',
    });
    expect(
      (await admin.get(`${base}/sub-agent-function-tools/sub-agent/writer/function-tool/sum/exists`)).body,
    ).toEqual({ exists: true });
    expect((await admin.get(`${base}/sub-agent-data-components/agent/writer/component/chart/exists`)).body).toEqual({
      exists: true,
    });
    expect((await admin.get(`${base}/sub-agent-artifact-components/agent/writer/component/doc/exists`)).body).toEqual({
      exists: true,
    });
    expect((await admin.get(`${base}/sub-agent-skills/agent/writer`)).body.data).toEqual([
      expect.objectContaining({ id: skill.id, index: 1, alwaysLoaded: false }),
    ]);
    expect((await admin.get(`${base}/sub-agents/writer/external-agent-relations`)).body.data).toEqual([
      expect.objectContaining({ externalAgentId: 'billing' }),
    ]);
  });
});

describe('attachment access and events', () => {
  test('when no credential is sent, then attachment operations answer 401', async () => {
    const { agent, base } = await setup();
    expect((await anonymous.get(`${base}/sub-agent-tool-relations`)).status).toBe(401);
    expect(
      (
        await anonymous.post(`${base}/sub-agent-data-components`, {
          agentId: agent.id,
          dataComponentId: 'c',
          subAgentId: 'writer',
        })
      ).status,
    ).toBe(401);
    expect((await anonymous.get(`${base}/sub-agent-skills/agent/writer`)).status).toBe(401);
  });

  test("when another tenant's token is used, then attachment operations answer 403 and change nothing", async () => {
    const { p, agent, base } = await setup();
    const other = client(stack.gatewayUrl, await aTenantToken(admin, `${p.tenantId}-other`));
    expect((await other.get(`${base}/sub-agent-tool-relations`)).status).toBe(403);
    expect(
      (
        await other.post(`${base}/sub-agent-data-components`, {
          agentId: agent.id,
          dataComponentId: 'c',
          subAgentId: 'writer',
        })
      ).status,
    ).toBe(403);
    expect(
      (await other.post(`${base}/sub-agents/router/external-agent-relations`, { externalAgentId: 'billing' })).status,
    ).toBe(403);
    expect((await admin.get(`${base}/sub-agent-data-components/agent/writer`)).body.data).toEqual([]);
  });

  test("when a token of the tenant reads the same agent id in another tenant's path, then it cannot; under its own tenant the agent is 404", async () => {
    const { p, agent } = await setup();
    const token = await aTenantToken(admin, `${p.tenantId}-b`);
    const mine = client(stack.gatewayUrl, token);
    expect(
      (await mine.get(`${pa({ ...p, tenantId: `${p.tenantId}-b` }, agent.id)}/sub-agent-tool-relations`)).status,
    ).toBe(404);
  });

  test('when an attachment changes, then agent.updated is published naming the change', async () => {
    const { p, agent, base } = await setup();
    const sub = await collectEvents(eventFilter(agentUpdated, p));
    try {
      await sub.ready;
      await admin.post(`${base}/sub-agent-data-components`, {
        agentId: agent.id,
        dataComponentId: 'chart',
        subAgentId: 'writer',
      });
      const [evt] = await eventually(() => (sub.events.length ? sub.events : undefined), 'agent.updated');
      expect(evt).toMatchObject({
        type: 'agent.updated',
        data: {
          agent: { id: agent.id },
          change: { kind: 'data-component', action: 'attached', subAgentId: 'writer', targetId: 'chart' },
        },
      });
    } finally {
      await sub.close();
    }
  });

  test('when many attachments are made at once, then none is lost', async () => {
    const { agent, base } = await setup();
    const ids = Array.from({ length: 8 }, (_, i) => `c-${i}`);
    const results = await Promise.all(
      ids.map((id) =>
        admin.post(`${base}/sub-agent-data-components`, {
          agentId: agent.id,
          dataComponentId: id,
          subAgentId: 'writer',
        }),
      ),
    );
    expect(results.map((r) => r.status)).toEqual(ids.map(() => 201));
    const list = await admin.get(`${base}/sub-agent-data-components/agent/writer`);
    expect(list.body.data.map((c: { id: string }) => c.id).sort()).toEqual(ids.sort());
  });
});
