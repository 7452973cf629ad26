import { CONVERSATION_ERASURE_SERVICES } from '@platform/contracts';
import {
  aMemoryCredential,
  anAnalyticsKey,
  anApiKey,
  aProject,
  client,
  eventually,
  http,
  installChatWorkspace,
  projectPath,
  redisKeys,
  rowsOfProject,
  startReceiver,
  testDbPrefix,
  type Client,
} from '@platform/testkit';
import { admin, stack } from '../support/stack';
import { expectProblem } from '../support/expect-problem';
import { anEvaluator, evalsPath, finishedRun, resultsOf, runsPath } from '../support/evals';
import { CHAT, fake, withChatAgents } from '../support/chatapp';

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
    expect(
      (await run.post('/run/v1/events', { id, type: 'message', properties: { text: 'a refund please' }, ...anchor }))
        .status,
    ).toBe(201);
  }
  const ingest = client(stack.analyticsUrl, (await anAnalyticsKey(admin, p)).key);
  for (const conversationId of ['c-gone', 'c-kept']) {
    expect(
      (await ingest.post('/events', { entityType: 'conversation', conversationId, type: 'conversation.opened' }))
        .status,
    ).toBe(201);
  }
  for (const conversationId of ['c-gone', 'c-kept']) {
    expect((await admin.post(`${projectPath(p)}/feedback`, { conversationId, type: 'negative' })).status).toBe(201);
  }
  const evaluator = await anEvaluator(admin, p, {
    kind: 'contains',
    config: { value: 'refund', eventType: 'message', field: 'properties.text' },
  });
  const started = await admin.post(`${evalsPath(p)}/evaluate-conversations`, {
    conversationIds: ['c-gone', 'c-kept'],
    evaluatorIds: [evaluator.id],
  });
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
    expect(res.body.data).toMatchObject({
      id: expect.any(String),
      kind: 'conversation',
      conversationId: 'c-gone',
      completedAt: null,
    });
    expect(res.body.data.services.map((s: { service: string }) => s.service).sort()).toEqual(
      [...CONVERSATION_ERASURE_SERVICES].sort(),
    );
    const done = await doneErasure(admin, p, res.body.data.id);
    expect(
      done.services.every((s: { state: string; doneAt: string | null }) => s.state === 'done' && s.doneAt !== null),
    ).toBe(true);
    expect(done.completedAt).toEqual(expect.any(String));

    const feedback = await admin.get(`${projectPath(p)}/feedback`);
    expect(feedback.body.data.map((f: { conversationId: string }) => f.conversationId)).toEqual(['c-kept']);
    const results = await resultsOf(admin, p, runId);
    expect(results.map((r) => r.conversationId)).toEqual(['c-kept']);
    const evaluation = await admin.get(`${runsPath(p)}/${runId}`);
    expect(evaluation.body.data).toMatchObject({
      conversationIds: ['c-kept'],
      totalItems: 1,
      completedItems: 1,
      status: 'completed',
    });
    const counts = await admin.get(`${projectPath(p)}/analytics/counts`);
    expect(counts.body.data.total).toBe(1);
    // An erased event's id is free again: posting it creates a new event. The others are still there (a replay).
    expect(
      (await run.post('/run/v1/events', { id: 'ev-gone-1', type: 'message', conversationId: 'c-gone' })).status,
    ).toBe(201);
    expect(
      (await run.post('/run/v1/events', { id: 'ev-kept', type: 'message', conversationId: 'c-kept' })).status,
    ).toBe(200);
    expect(
      (await run.post('/run/v1/events', { id: 'ev-message-only', type: 'message', messageId: 'm-only' })).status,
    ).toBe(200);
  }, 120_000);

  test('when the deletion is repeated, then it answers 202 again and changes nothing more', async () => {
    const p = aProject();
    expect(
      (await admin.post(`${projectPath(p)}/feedback`, { conversationId: 'c-kept', type: 'positive' })).status,
    ).toBe(201);
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

/** Every Redis key of the test stack whose name holds the project (`<tenant>:<project>` at its end or before a `:`). */
async function redisKeysOf(p: Project): Promise<string[]> {
  const base = `${stack.env.REDIS_KEY_PREFIX}*${p.tenantId}:${p.projectId}`;
  return [...(await redisKeys(stack.env.REDIS_URL!, base)), ...(await redisKeys(stack.env.REDIS_URL!, `${base}:*`))];
}

/** The databases (`<prefix>_<service>`, dashes as underscores) that hold rows of the project. */
async function servicesHolding(p: Project): Promise<string[]> {
  const rows = await rowsOfProject(stack.env.MONGO_URL!, testDbPrefix(), p);
  return [...new Set(Object.keys(rows).map((k) => k.slice(testDbPrefix().length + 1).split('.')[0]!))].sort();
}

describe("erasure of a conversation's stored answers", () => {
  test('when a conversation is deleted, then an Idempotency-Key request that named it runs again, and one that named another conversation still replays', async () => {
    const p = aProject();
    const run = client(stack.gatewayUrl, (await anApiKey(admin, p)).key);
    const post = (key: string, conversationId: string) =>
      http('POST', `${stack.gatewayUrl}/run/v1/events`, {
        token: run.token,
        headers: { 'idempotency-key': key },
        json: { type: 'message', conversationId },
      });
    const gone = await post('idem-gone', 'c-gone');
    const kept = await post('idem-kept', 'c-kept');
    expect([gone.status, kept.status]).toEqual([201, 201]);
    expect((await post('idem-gone', 'c-gone')).headers.get('idempotent-replayed')).toBe('true');

    const res = await admin.delete(`${projectPath(p)}/conversations/c-gone`);
    await doneErasure(admin, p, res.body.data.id);
    const again = await post('idem-gone', 'c-gone');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
    expect(again.body.data.id).not.toBe(gone.body.data.id);
    const replay = await post('idem-kept', 'c-kept');
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(kept.body);
  }, 60_000);
});

describe('erasure of a project', () => {
  test('when a project is deleted, then no service holds a document or a Redis key of it but its audit log, which still shows who deleted it, its stored answers are gone and its event ids are free again', async () => {
    const p = aProject();
    const other = { tenantId: p.tenantId, projectId: `${p.projectId}-other` };
    const P = projectPath(p);
    const receiver = await startReceiver();
    try {
      // Deliveries in the dispatcher: every feedback of the project reaches a local receiver.
      expect(
        (
          await admin.post(`${P}/webhook-destinations`, {
            name: 'hook',
            url: receiver.url,
            eventTypes: ['feedback.created'],
          })
        ).status,
      ).toBe(201);
      const { run: keyOfErased } = await twoConversations(p);
      await twoConversations(other);
      await receiver.waitFor(() => true, 2);
      await aMemoryCredential(admin, p, { id: 'cred-1', name: 'token', retrievalParams: { key: 'k' } });
      // chatapp: a workspace installed for the project, and a channel routed to one of its agents.
      await withChatAgents(p);
      const team = await fake.createTeam({ channels: [{ id: 'CSUPPORT1', name: 'support', memberCount: 3 }] });
      const { result } = await installChatWorkspace(stack.gatewayUrl, {
        token: stack.adminToken,
        tenantId: p.tenantId,
        projectId: p.projectId,
        teamId: team.teamId,
      });
      expect(result.searchParams.get('success')).toBe('true');
      expect(
        (
          await admin.put(`${CHAT}/workspaces/${team.teamId}/channels/CSUPPORT1/settings`, {
            agentConfig: { agentId: 'support-bot', projectId: p.projectId },
          })
        ).status,
      ).toBe(200);
      // Redis: a trigger called (its rate counter), the API-key list read (its cache stamp), an answer stored for an Idempotency-Key.
      const trigger = await admin.post(`${P}/agents/support-bot/triggers`, { name: 'hook' });
      expect((await http('POST', trigger.body.data.webhookUrl, { json: { n: 1 } })).status).toBe(202);
      expect((await admin.get(`${P}/api-keys`)).status).toBe(200);
      const idem = { headers: { 'idempotency-key': 'erase-me-1' } };
      const first = await admin.post(`${P}/feedback`, { conversationId: 'c-idem', type: 'positive' }, idem);
      expect(first.status).toBe(201);
      expect(
        (await admin.post(`${P}/feedback`, { conversationId: 'c-idem', type: 'positive' }, idem)).headers.get(
          'idempotent-replayed',
        ),
      ).toBe('true');

      const project = `${p.tenantId}:${p.projectId}:`;
      expect(
        (await redisKeysOf(p))
          .map((k) =>
            k.slice(stack.env.REDIS_KEY_PREFIX!.length).replace(project, '<p>:').split(':').slice(0, 2).join(':'),
          )
          .sort(),
      ).toEqual(expect.arrayContaining(['apikeys:stamp', 'idem:index', 'trigger-rate:<p>']));
      // Every service that holds project data holds some (credential-gateway holds none: its signing keys are the platform's).
      expect(await servicesHolding(p)).toEqual([
        'analytics',
        'chatapp',
        'evals',
        'events_ingest',
        'management',
        'webhook_dispatcher',
      ]);

      const res = await admin.delete(P);
      expect(res.status).toBe(202);
      expect(res.body.data).toMatchObject({ kind: 'project', conversationId: null });
      expect(res.body.data.services.map((s: { service: string }) => s.service).sort()).toEqual([
        'analytics',
        'chatapp',
        'credential-gateway',
        'evals',
        'events-ingest',
        'gateway',
        'management',
        'webhook-dispatcher',
      ]);
      await doneErasure(admin, p, res.body.data.id);

      // Every database of every service: the erasure job and its parts (ids only), the proof of what was erased and
      // when, and the audit log, which is append-only, are the records kept.
      const left = await rowsOfProject(stack.env.MONGO_URL!, testDbPrefix(), p);
      expect(
        Object.keys(left)
          .filter((k) => !/\.auditLog$/.test(k))
          .sort(),
      ).toEqual([expect.stringMatching(/_management\.erasureParts$/), expect.stringMatching(/_management\.erasures$/)]);
      // The tenant's log still shows the project's changes, and who erased it.
      const log = await admin.get(`/manage/tenants/${p.tenantId}/audit-log?operationId=deleteProject&limit=100`);
      expect(log.status).toBe(200);
      expect(log.body.data.map((e: { projectId: string | null; outcome: string }) => [e.projectId, e.outcome])).toEqual(
        [[p.projectId, 'succeeded']],
      );
      const before = await admin.get(`/manage/tenants/${p.tenantId}/audit-log?operationId=createApiKey&limit=100`);
      expect(before.body.data.some((e: { projectId: string | null }) => e.projectId === p.projectId)).toBe(true);
      expect(await redisKeysOf(p)).toEqual([]);
      expect((await admin.get(`${P}/feedback`)).body.pagination.total).toBe(0);
      // The stored answer is gone: the same Idempotency-Key runs the request again.
      const again = await admin.post(`${P}/feedback`, { conversationId: 'c-idem', type: 'positive' }, idem);
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBeNull();
      expect(again.body.data.id).not.toBe(first.body.data.id);
      // Its API keys are gone with it, at once on every gateway (none answers from its cache of verified keys); with a
      // new one, an event id it had is a new event.
      expectProblem(await keyOfErased.post('/run/v1/events', { type: 'message', conversationId: 'c-after' }), 401);
      const run = client(stack.gatewayUrl, (await anApiKey(admin, p)).key);
      expect(
        (await run.post('/run/v1/events', { id: 'ev-kept', type: 'message', conversationId: 'c-kept' })).status,
      ).toBe(201);
      // Another project of the same tenant keeps everything.
      expect((await admin.get(`${projectPath(other)}/feedback`)).body.pagination.total).toBe(2);
      expect(
        (await client(stack.gatewayUrl).get(`/manage/tenants/${other.tenantId}/projects/${other.projectId}/feedback`))
          .status,
      ).toBe(401);
    } finally {
      await receiver.close();
    }
  }, 180_000);
});
