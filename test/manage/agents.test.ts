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
import {
  agentCreated,
  allOperations,
  eventFilter,
  getAgentDefinition,
  listAgentDefinitions,
  lookupAgent,
} from '@platform/contracts';

const anonymous = client(stack.gatewayUrl);

const lookup = (p: { tenantId: string; projectId: string }, agentId: string) =>
  internalRequest(lookupAgent.subject, { ...p, agentId });
const definition = (p: { tenantId: string; projectId: string }, agentId: string) =>
  internalRequest(getAgentDefinition.subject, { ...p, agentId });

describe('POST P/agent (create a full agent)', () => {
  test('when a full agent is created, then it answers 201 with the definition and the lookup and definition subjects know it', async () => {
    const p = aProject();
    const input = aFullAgent();
    const res = await admin.post(`${projectPath(p)}/agent`, input);
    expect(res.status).toBe(201);
    expect(res.contentType).toMatch(/application\/json/);
    expect(res.body.data).toMatchObject({
      id: input.id,
      name: 'Support bot',
      defaultSubAgentId: 'router',
      executionMode: 'classic',
      subAgents: {
        router: {
          id: 'router',
          name: 'Router',
          type: 'internal',
          canTransferTo: ['writer'],
          canDelegateTo: ['writer'],
        },
        writer: { id: 'writer', name: 'Writer', type: 'internal' },
      },
      tools: input.tools,
      functionTools: input.functionTools,
      functions: input.functions,
      externalAgents: input.externalAgents,
      teamAgents: input.teamAgents,
    });
    expect(typeof res.body.data.createdAt).toBe('string');

    await expect(lookup(p, input.id)).resolves.toEqual({
      ok: true,
      status: 200,
      body: { exists: true, agent: { id: input.id, name: 'Support bot' } },
    });
    const def = await definition(p, input.id);
    expect(def.ok).toBe(true);
    expect(def.body).toEqual(res.body.data);
  });

  test('when the definition carries every nested part, then each is stored and returned', async () => {
    const p = aProject();
    const skill = await aStoredSkill(admin, p);
    // The router's tools: sent, and expected back as sent.
    const canUse = [
      {
        toolId: 'search',
        agentToolRelationId: 'rel-search',
        headers: { 'X-Team': 'support' },
        toolPolicies: { find: { needsApproval: true } },
        toolSelection: ['find'],
      },
      { toolId: 'sum', agentToolRelationId: 'rel-sum' },
    ];
    const input = aFullAgent({
      contextConfigId: 'ctx-1',
      contextConfig: {
        id: 'ctx-1',
        contextVariables: { user: { type: 'fetch' } },
        headersSchema: { type: 'object', $schema: 'https://json-schema.org/draft/2020-12/schema' },
      },
      models: {
        base: {
          model: 'openai/gpt-4.1',
          allowedProviders: ['openai'],
          fallbackModels: ['anthropic/claude'],
          providerOptions: { temperature: 0.2 },
        },
        structuredOutput: { model: 'openai/gpt-4.1-mini' },
        summarizer: { model: 'openai/gpt-4.1-nano' },
      },
      statusUpdates: {
        enabled: true,
        numEvents: 3,
        timeInSeconds: 10,
        prompt: 'Say what you do',
        statusComponents: [
          {
            type: 'progress',
            description: 'Progress',
            detailsSchema: { type: 'object', properties: { step: { type: 'string' } }, required: ['step'] },
          },
        ],
      },
      stopWhen: { transferCountIs: 5 },
      triggers: {
        nightly: {
          id: 'nightly',
          name: 'Nightly',
          dispatchDelayMs: 1000,
          messageTemplate: 'Run {{job}}',
          enabled: true,
        },
      },
      subAgents: {
        router: {
          id: 'router',
          name: 'Router',
          type: 'internal',
          stopWhen: { stepCountIs: 4 },
          models: { base: { model: 'openai/gpt-4.1' } },
          conversationHistoryConfig: { mode: 'full', limit: 10 },
          canDelegateTo: ['writer', 'billing', 'sales'],
          canTransferTo: ['writer'],
          canUse,
          dataComponents: ['chart'],
          artifactComponents: ['doc'],
          skills: [{ id: skill.id, index: 0, alwaysLoaded: true }],
          outputContract: {
            allowText: true,
            onViolation: 'retry',
            requireArtifact: ['doc'],
            requireComponent: ['chart'],
            requireTransfer: false,
            retryBudget: 2,
          },
        },
        writer: { id: 'writer', name: 'Writer', type: 'internal' },
      },
    });
    const res = await admin.post(`${projectPath(p)}/agent`, input);
    expect(res.status).toBe(201);
    const { createdAt: _c, updatedAt: _u, subAgents, ...rest } = res.body.data;
    const { subAgents: inSubs, ...inRest } = input as any;
    expect(rest).toEqual(inRest);
    expect(subAgents.router).toMatchObject({
      ...inSubs.router,
      canDelegateTo: expect.arrayContaining(['writer', 'billing', 'sales']),
      canUse,
    });
    const def = await definition(p, input.id);
    expect(def.body).toEqual(res.body.data);
  });

  test('when the same agent id is created again, then it answers 409 with the legacy body and the first definition stays whole', async () => {
    const p = aProject();
    const first = await aStoredAgent(admin, p);
    const again = await admin.post(
      `${projectPath(p)}/agent`,
      aFullAgent({
        id: first.id,
        name: 'Other name',
        subAgents: { solo: { id: 'solo', name: 'Solo', type: 'internal' } },
        defaultSubAgentId: 'solo',
      }),
    );
    expect(again.status).toBe(409);
    expect(again.contentType).toMatch(/^application\/json/);
    expect(again.body).toEqual({ details: null, error: 'conflict', message: expect.stringContaining(first.id) });
    const def = await definition(p, first.id);
    expect(def.body).toEqual(first);
  });

  test('when an agent with that id exists in another project, then creating it here is allowed', async () => {
    const p = aProject();
    const other = { ...p, projectId: `${p.projectId}-b` };
    const a = await aStoredAgent(admin, p);
    const res = await admin.post(`${projectPath(other)}/agent`, aFullAgent({ id: a.id }));
    expect(res.status).toBe(201);
  });

  const long = (n: number) => 'x'.repeat(n);
  const invalid: Array<[string, (a: any) => unknown, string]> = [
    ['id is missing', ({ id: _, ...a }) => a, '/id'],
    ['id has a character outside the RID alphabet', (a) => ({ ...a, id: 'bad id' }), '/id'],
    ['id is longer than 255', (a) => ({ ...a, id: long(256) }), '/id'],
    ['name is missing', ({ name: _, ...a }) => a, '/name'],
    ['name is empty', (a) => ({ ...a, name: '' }), '/name'],
    ['name is longer than 256', (a) => ({ ...a, name: long(257) }), '/name'],
    ['prompt is longer than 200000', (a) => ({ ...a, prompt: long(200001) }), '/prompt'],
    ['contextConfigId is longer than 256', (a) => ({ ...a, contextConfigId: long(257) }), '/contextConfigId'],
    ['defaultSubAgentId is not a RID', (a) => ({ ...a, defaultSubAgentId: 'no/slash' }), '/defaultSubAgentId'],
    ['executionMode is not classic or durable', (a) => ({ ...a, executionMode: 'fast' }), '/executionMode'],
    ['subAgents is missing', ({ subAgents: _, ...a }) => a, '/subAgents'],
    ['subAgents is empty', (a) => ({ ...a, subAgents: {}, defaultSubAgentId: undefined }), '/subAgents'],
    [
      'a sub-agent has no type',
      (a) => ({ ...a, subAgents: { ...a.subAgents, writer: { id: 'writer', name: 'Writer' } } }),
      '/subAgents/writer/type',
    ],
    [
      'a sub-agent has no name',
      (a) => ({ ...a, subAgents: { ...a.subAgents, writer: { id: 'writer', type: 'internal' } } }),
      '/subAgents/writer/name',
    ],
    [
      'a sub-agent has no id',
      (a) => ({ ...a, subAgents: { ...a.subAgents, writer: { name: 'Writer', type: 'internal' } } }),
      '/subAgents/writer/id',
    ],
    [
      'a canUse entry has no toolId',
      (a) => ({
        ...a,
        subAgents: { ...a.subAgents, writer: { ...a.subAgents.writer, canUse: [{ toolSelection: ['find'] }] } },
      }),
      '/subAgents/writer/canUse/0/toolId',
    ],
    [
      'stopWhen.transferCountIs is not an integer',
      (a) => ({ ...a, stopWhen: { transferCountIs: 1.5 } }),
      '/stopWhen/transferCountIs',
    ],
    [
      'a tool config is not mcp',
      (a) => ({
        ...a,
        tools: { search: { ...a.tools.search, config: { type: 'rest', mcp: a.tools.search.config.mcp } } },
      }),
      '/tools/search/config/type',
    ],
    [
      'a tool header is reserved',
      (a) => ({ ...a, tools: { search: { ...a.tools.search, headers: { Connection: 'close' } } } }),
      '/tools/search/headers/Connection',
    ],
    [
      'a canUse header value is empty',
      (a) => ({
        ...a,
        subAgents: {
          ...a.subAgents,
          writer: { ...a.subAgents.writer, canUse: [{ toolId: 'search', headers: { 'X-A': '' } }] },
        },
      }),
      '/subAgents/writer/canUse/0/headers/X-A',
    ],
    ['a field is unknown', (a) => ({ ...a, colour: 'blue' }), ''],
    [
      'a trigger dispatchDelayMs is above 600000',
      (a) => ({ ...a, triggers: { t: { name: 'T', dispatchDelayMs: 600001 } } }),
      '/triggers/t/dispatchDelayMs',
    ],
  ];
  test.each(invalid)(
    'when %s, then it answers 400 problem+json pointing at the field and stores nothing',
    async (_what, mutate, pointer) => {
      const p = aProject();
      const input = mutate(aFullAgent()) as { id?: string };
      const res = await admin.post(`${projectPath(p)}/agent`, input);
      expect(res.status).toBe(400);
      expect(res.contentType).toMatch(/application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 400, code: 'bad_request', error: { code: 'bad_request' } });
      expect(res.body.errors.map((e: { pointer: string }) => e.pointer)).toContain(pointer);
      if (typeof input.id === 'string' && input.id.length < 256 && !input.id.includes(' ')) {
        await expect(lookup(p, input.id)).resolves.toMatchObject({ body: { exists: false } });
      }
    },
  );

  const unknownRefs: Array<[string, (a: any) => unknown, string]> = [
    [
      'defaultSubAgentId names an unknown sub-agent',
      (a) => ({ ...a, defaultSubAgentId: 'ghost' }),
      '/defaultSubAgentId',
    ],
    [
      'canTransferTo names an unknown sub-agent',
      (a) => ({ ...a, subAgents: { ...a.subAgents, writer: { ...a.subAgents.writer, canTransferTo: ['ghost'] } } }),
      '/subAgents/writer/canTransferTo/0',
    ],
    [
      'canDelegateTo names an unknown agent',
      (a) => ({
        ...a,
        subAgents: { ...a.subAgents, writer: { ...a.subAgents.writer, canDelegateTo: ['router', 'ghost'] } },
      }),
      '/subAgents/writer/canDelegateTo/1',
    ],
    [
      'canUse names an unknown tool',
      (a) => ({
        ...a,
        subAgents: { ...a.subAgents, writer: { ...a.subAgents.writer, canUse: [{ toolId: 'ghost' }] } },
      }),
      '/subAgents/writer/canUse/0/toolId',
    ],
    [
      'a function tool names an unknown function',
      (a) => ({ ...a, functionTools: { sum: { ...a.functionTools.sum, functionId: 'ghost' } } }),
      '/functionTools/sum/functionId',
    ],
    [
      'a sub-agent is filed under another key',
      (a) => ({ ...a, subAgents: { ...a.subAgents, writer: { ...a.subAgents.writer, id: 'author' } } }),
      '/subAgents/writer/id',
    ],
    [
      'a skill does not exist in the project',
      (a) => ({
        ...a,
        subAgents: { ...a.subAgents, writer: { ...a.subAgents.writer, skills: [{ id: 'ghost-skill', index: 0 }] } },
      }),
      '/subAgents/writer/skills/0/id',
    ],
    [
      'contextConfigId differs from contextConfig.id',
      (a) => ({ ...a, contextConfigId: 'c1', contextConfig: { id: 'c2' } }),
      '/contextConfigId',
    ],
    [
      'the output contract requires a component the sub-agent does not list',
      (a) => ({
        ...a,
        subAgents: {
          ...a.subAgents,
          writer: { ...a.subAgents.writer, outputContract: { requireComponent: ['chart'] } },
        },
      }),
      '/subAgents/writer/outputContract/requireComponent/0',
    ],
    [
      'a sub-agent lists a tool twice',
      (a) => ({
        ...a,
        subAgents: {
          ...a.subAgents,
          writer: { ...a.subAgents.writer, canUse: [{ toolId: 'search' }, { toolId: 'search' }] },
        },
      }),
      '/subAgents/writer/canUse/1',
    ],
  ];
  test.each(unknownRefs)(
    'when %s, then it answers 422 pointing at the field and stores nothing',
    async (_what, mutate, pointer) => {
      const p = aProject();
      const input = mutate(aFullAgent()) as { id: string };
      const res = await admin.post(`${projectPath(p)}/agent`, input);
      expect(res.status).toBe(422);
      expect(res.contentType).toMatch(/application\/problem\+json/);
      expect(res.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ pointer })]));
      await expect(lookup(p, input.id)).resolves.toMatchObject({ body: { exists: false } });
      await expect(definition(p, input.id)).resolves.toMatchObject({ ok: false, problem: { status: 404 } });
    },
  );

  test('when the projectId in the path is not a valid project id, then it answers 400', async () => {
    const p = aProject();
    const res = await admin.post(`/manage/tenants/${p.tenantId}/projects/Bad_Project/agent`, aFullAgent());
    expect(res.status).toBe(400);
    expect(res.body.errors[0].pointer).toBe('#params/projectId');
  });

  test('when no credential is sent, then it answers 401 and stores nothing', async () => {
    const p = aProject();
    const input = aFullAgent();
    const res = await anonymous.post(`${projectPath(p)}/agent`, input);
    expect(res.status).toBe(401);
    await expect(lookup(p, input.id)).resolves.toMatchObject({ body: { exists: false } });
  });

  test("when another tenant's token is used, then it answers 403 and stores nothing; the tenant's own token may create", async () => {
    const p = aProject();
    const otherToken = await aTenantToken(admin, `${p.tenantId}-other`);
    const input = aFullAgent();
    const res = await client(stack.gatewayUrl, otherToken).post(`${projectPath(p)}/agent`, input);
    expect(res.status).toBe(403);
    await expect(lookup(p, input.id)).resolves.toMatchObject({ body: { exists: false } });
    const ownToken = await aTenantToken(admin, p.tenantId);
    expect((await client(stack.gatewayUrl, ownToken).post(`${projectPath(p)}/agent`, input)).status).toBe(201);
  });

  test('when a tenant viewer creates an agent, then it answers 403', async () => {
    const p = aProject();
    const viewer = await aTenantToken(admin, p.tenantId, 'viewer');
    expect((await client(stack.gatewayUrl, viewer).post(`${projectPath(p)}/agent`, aFullAgent())).status).toBe(403);
  });

  test('when an agent is created, then agent.created is published with its sub-agents', async () => {
    const p = aProject();
    const sub = await collectEvents(eventFilter(agentCreated, p));
    try {
      await sub.ready;
      const a = await aStoredAgent(admin, p);
      const [evt] = await eventually(() => (sub.events.length ? sub.events : undefined), 'agent.created');
      expect(evt).toMatchObject({
        type: 'agent.created',
        tenantId: p.tenantId,
        projectId: p.projectId,
        data: { agent: { id: a.id, name: a.name, subAgentIds: ['router', 'writer'] } },
      });
    } finally {
      await sub.close();
    }
  });
});

describe('GET /manage/available-agents', () => {
  test('when the admin asks, then agents of every tenant are listed; a tenant token sees only its own tenant', async () => {
    const p1 = aProject();
    const p2 = aProject();
    const a1 = await aStoredAgent(admin, p1);
    const a2 = await aStoredAgent(admin, p2);
    const all = await admin.get('/manage/available-agents');
    expect(all.status).toBe(200);
    expect(all.body.data).toEqual(
      expect.arrayContaining([
        { agentId: a1.id, agentName: 'Support bot', projectId: p1.projectId, tenantId: p1.tenantId },
        { agentId: a2.id, agentName: 'Support bot', projectId: p2.projectId, tenantId: p2.tenantId },
      ]),
    );

    const token = await aTenantToken(admin, p1.tenantId, 'viewer');
    const mine = await client(stack.gatewayUrl, token).get('/manage/available-agents');
    expect(mine.status).toBe(200);
    expect(mine.body).toEqual({
      data: [{ agentId: a1.id, agentName: 'Support bot', projectId: p1.projectId, tenantId: p1.tenantId }],
    });
  });

  test('when no credential is sent, then it answers 401', async () => {
    const res = await anonymous.get('/manage/available-agents');
    expect(res.status).toBe(401);
    expect(res.contentType).toMatch(/application\/problem\+json/);
  });

  test('when only a session cookie is sent, then it answers 401 (bearer only)', async () => {
    const session = await admin.post('/manage/auth/session');
    expect(session.status).toBe(201);
    const cookie = session.headers.get('set-cookie')!.split(';')[0]!;
    const res = await anonymous.get('/manage/available-agents', { cookie });
    expect(res.status).toBe(401);
  });

  test('when the bearer token is unknown, then it answers 401', async () => {
    expect((await client(stack.gatewayUrl, 'mt_nope').get('/manage/available-agents')).status).toBe(401);
  });
});

describe('agent lookup and definition subjects', () => {
  test('when the agent does not exist, then lookup says exists:false and the definition is a 404 problem', async () => {
    const p = aProject();
    await expect(lookup(p, 'ghost')).resolves.toEqual({ ok: true, status: 200, body: { exists: false } });
    const def = await definition(p, 'ghost');
    expect(def).toMatchObject({ ok: false, problem: { status: 404, code: 'not_found' } });
  });

  test("when the agent belongs to another tenant's project, then the lookup does not see it", async () => {
    const p = aProject();
    const a = await aStoredAgent(admin, p);
    await expect(lookup({ ...p, tenantId: `${p.tenantId}-x` }, a.id)).resolves.toMatchObject({
      body: { exists: false },
    });
  });

  test('when the request is malformed, then the subject answers a 400 problem', async () => {
    const res = await internalRequest(lookupAgent.subject, { tenantId: 't' });
    expect(res).toMatchObject({ ok: false, problem: { status: 400 } });
    expect(
      await internalRequest(listAgentDefinitions.subject, { tenantId: 't', projectId: 'p', limit: 0 }),
    ).toMatchObject({ ok: false, problem: { status: 400 } });
  });

  test("when a project's agent definitions are listed a page at a time, then each agent comes once, in id order, with its full definition", async () => {
    const p = aProject();
    const ids = ['agent-c', 'agent-a', 'agent-b'];
    for (const id of ids) await aStoredAgent(admin, p, { id });
    await aStoredAgent(admin, aProject(), { id: 'agent-other' });
    const first = await internalRequest(listAgentDefinitions.subject, { ...p, limit: 2 });
    expect(first).toMatchObject({ ok: true, status: 200, body: { next: 'agent-b' } });
    expect(first.body.agents.map((a: any) => a.id)).toEqual(['agent-a', 'agent-b']);
    expect(first.body.agents[0]).toEqual((await definition(p, 'agent-a')).body);
    const second = await internalRequest(listAgentDefinitions.subject, { ...p, limit: 2, after: first.body.next });
    expect(second.body).toEqual({
      agents: [expect.objectContaining({ id: 'agent-c', subAgents: expect.any(Object) })],
      next: null,
    });
    expect(await internalRequest(listAgentDefinitions.subject, { ...aProject() })).toEqual({
      ok: true,
      status: 200,
      body: { agents: [], next: null },
    });
  });
});

describe('the OpenAPI document', () => {
  const mine = allOperations.filter((op) =>
    /^svc\.management\.(agents|external-agent-relations|sub-agent-[a-z-]+|skills)\./.test(op.subject),
  );

  test('when it is fetched, then every agent, attachment and skill operation is documented with its schemas', async () => {
    // 32 operations of the spec's tables, plus get, update and delete of a skill, delete of a tool relation, and
    // list, get, replace and delete of an agent.
    expect(mine).toHaveLength(40);
    const res = await anonymous.get('/openapi.json');
    expect(res.status).toBe(200);
    for (const op of mine) {
      const entry = res.body.paths[op.path]?.[op.method];
      expect(entry).toMatchObject({ operationId: op.operationId });
      const success = entry.responses[String(op.reply.status)];
      expect(success).toBeDefined();
      if (op.reply.body) expect(success.content['application/json'].schema.type).toBe('object');
      if (op.body) expect(entry.requestBody.content['application/json'].schema.type).toBe('object');
      for (const p of op.path.match(/\{(\w+)\}/g) ?? [])
        expect(entry.parameters.map((x: { name: string }) => `{${x.name}}`)).toContain(p);
    }
  });

  test('when it describes create full agent and the attach operations, then their 409 carries the legacy error body', async () => {
    const res = await anonymous.get('/openapi.json');
    for (const id of ['createFullAgent', 'attachDataComponent', 'attachArtifactComponent', 'attachFunctionTool']) {
      const op = mine.find((o) => o.operationId === id)!;
      const entry = res.body.paths[op.path][op.method];
      expect(entry.responses['409'].content['application/json'].schema).toEqual({
        $ref: '#/components/schemas/LegacyError',
      });
      expect(entry.responses['422'].content['application/json']).toBeUndefined();
    }
  });
});
