import { agentDeleted, agentUpdated, eventFilter, replaceAgentDefinition } from '@platform/contracts';
import type { EventOf } from '@platform/consumer';
import {
  aFullAgent,
  anApiKey,
  aProject,
  aStoredAgent,
  aTenantToken,
  client,
  collectEvents,
  eventually,
  internalRequest,
  projectPath,
  startReceiver,
  uniqueId,
  type Receiver,
} from '@platform/testkit';
import { admin, stack } from '../support/stack';
import { adminNats } from '../support/connections';
import { createDestination } from '../support/webhooks';

/** GET P/agents, GET|PUT|DELETE PA: agents a user can read, change and delete, with ETag / If-Match. */

type P = { tenantId: string; projectId: string };
const pa = (p: P, agentId: string) => `${projectPath(p)}/agents/${agentId}`;
const ifMatch = (etag: string) => ({ headers: { 'if-match': etag } });

const nats = adminNats(stack);
let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver?.close();
});

/** The agent's current version, read through GET PA. */
/** Attaches the data component `chart` to the agent's sub-agent `writer` (answered 201). */
async function attachChart(p: P, agentId: string): Promise<void> {
  const res = await admin.post(`${pa(p, agentId)}/sub-agent-data-components`, {
    agentId,
    dataComponentId: 'chart',
    subAgentId: 'writer',
  });
  expect(res.status).toBe(201);
}

async function etagOf(p: P, agentId: string): Promise<string> {
  const res = await admin.get(pa(p, agentId));
  expect(res.status).toBe(200);
  return res.headers.get('etag')!;
}

describe('GET PA and GET P/agents', () => {
  test('when an agent is created, then GET PA answers exactly what POST answered, with an ETag', async () => {
    const p = aProject();
    const created = await admin.post(`${projectPath(p)}/agent`, aFullAgent());
    expect(created.status).toBe(201);
    const res = await admin.get(pa(p, created.body.data.id));
    expect(res.status).toBe(200);
    expect(res.contentType).toMatch(/application\/json/);
    expect(res.body).toEqual({ data: created.body.data });
    expect(res.headers.get('etag')).toMatch(/^"[^"]+"$/);
    // Reading again changes nothing: the same version.
    expect((await admin.get(pa(p, created.body.data.id))).headers.get('etag')).toBe(res.headers.get('etag'));
  });

  test('when an agent has attachments, then GET PA shows them in the sub-agents, as the create answer does', async () => {
    const p = aProject();
    const agent = await aStoredAgent(admin, p);
    await attachChart(p, agent.id);
    const res = await admin.get(pa(p, agent.id));
    expect(res.body.data.subAgents.writer.dataComponents).toEqual(['chart']);
  });

  test('when a project has agents, then GET P/agents pages them by id with the list pagination', async () => {
    const p = aProject();
    const ids = ['a-1', 'a-2', 'a-3'];
    for (const id of [...ids].reverse()) await aStoredAgent(admin, p, { id });
    const first = await admin.get(`${projectPath(p)}/agents?limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.data.map((a: { id: string }) => a.id)).toEqual(['a-1', 'a-2']);
    expect(first.body.pagination).toEqual({ page: 1, limit: 2, total: 3, pages: 2, completedCount: 2 });
    const second = await admin.get(`${projectPath(p)}/agents?limit=2&page=2`);
    expect(second.body.data.map((a: { id: string }) => a.id)).toEqual(['a-3']);
    expect(second.body.pagination).toEqual({ page: 2, limit: 2, total: 3, pages: 2, completedCount: 3 });
    // Each entry is the agent as GET PA serves it.
    expect(second.body.data[0]).toEqual((await admin.get(pa(p, 'a-3'))).body.data);
    // The default page is 10 entries.
    expect((await admin.get(`${projectPath(p)}/agents`)).body.pagination).toMatchObject({
      page: 1,
      limit: 10,
      total: 3,
    });
  });

  test('when the list query is out of range, then it answers 400 with pointers', async () => {
    const p = aProject();
    const res = await admin.get(`${projectPath(p)}/agents?limit=101&page=0`);
    expect(res.status).toBe(400);
    expect(res.contentType).toMatch(/application\/problem\+json/);
    expect(res.body.errors.map((e: { pointer: string }) => e.pointer).sort()).toEqual(['#query/limit', '#query/page']);
  });

  test('when the agent does not exist, then GET, PUT and DELETE answer 404 problems', async () => {
    const p = aProject();
    for (const res of [
      await admin.get(pa(p, 'nobody')),
      await admin.put(pa(p, 'nobody'), aFullAgent({ id: 'nobody' })),
      await admin.delete(pa(p, 'nobody')),
    ]) {
      expect(res.status).toBe(404);
      expect(res.contentType).toMatch(/application\/problem\+json/);
      expect(res.body).toMatchObject({ code: 'not_found', detail: 'Agent "nobody" not found' });
    }
  });
});

describe('PUT PA (replace the whole definition)', () => {
  test('when the definition is replaced, then GET PA shows the new one, the ETag moves on and agent.updated is published', async () => {
    const p = aProject();
    const agent = await aStoredAgent(admin, p);
    const before = await etagOf(p, agent.id);
    const sub = await collectEvents(eventFilter(agentUpdated, p));
    try {
      await sub.ready;
      const next = aFullAgent({
        id: agent.id,
        name: 'Renamed bot',
        prompt: 'Be brief.',
        subAgents: {
          solo: {
            id: 'solo',
            name: 'Solo',
            type: 'internal',
            dataComponents: ['table'],
            canUse: [{ toolId: 'search' }],
          },
        },
        defaultSubAgentId: 'solo',
      });
      const res = await admin.put(pa(p, agent.id), next, ifMatch(before));
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({
        id: agent.id,
        name: 'Renamed bot',
        prompt: 'Be brief.',
        defaultSubAgentId: 'solo',
      });
      expect(Object.keys(res.body.data.subAgents)).toEqual(['solo']);
      expect(res.body.data.subAgents.solo).toMatchObject({ dataComponents: ['table'], canUse: [{ toolId: 'search' }] });
      const after = res.headers.get('etag')!;
      expect(after).not.toBe(before);
      const read = await admin.get(pa(p, agent.id));
      expect(read.body.data).toEqual(res.body.data);
      expect(read.headers.get('etag')).toBe(after);
      // The attachment operations see the new sub-agents: the old ones are gone.
      expect(
        (await admin.get(`${pa(p, agent.id)}/sub-agent-data-components/agent/solo`)).body.data.map(
          (c: { id: string }) => c.id,
        ),
      ).toEqual(['table']);
      expect((await admin.get(`${pa(p, agent.id)}/sub-agent-data-components/agent/writer`)).status).toBe(404);
      const [evt] = await eventually(() => (sub.events.length ? sub.events : undefined), 'agent.updated');
      expect(evt).toMatchObject({
        type: 'agent.updated',
        data: {
          agent: { id: agent.id, name: 'Renamed bot', subAgentIds: ['solo'] },
          change: { kind: 'definition', action: 'replaced', branchName: null },
        },
      });
    } finally {
      await sub.close();
    }
  });

  test('when the body is invalid, then it answers 400 or 422 with pointers and nothing changes', async () => {
    const p = aProject();
    const agent = await aStoredAgent(admin, p);
    const before = await admin.get(pa(p, agent.id));
    const unknownField = await admin.put(pa(p, agent.id), { ...aFullAgent({ id: agent.id }), colour: 'blue' });
    expect(unknownField.status).toBe(400);
    expect(unknownField.contentType).toMatch(/application\/problem\+json/);
    const noSubAgents = await admin.put(pa(p, agent.id), aFullAgent({ id: agent.id, subAgents: {} }));
    expect(noSubAgents.status).toBe(400);
    expect(noSubAgents.body.errors[0].pointer).toBe('/subAgents');
    const otherId = await admin.put(pa(p, agent.id), aFullAgent({ id: 'someone-else' }));
    expect(otherId.status).toBe(422);
    expect(otherId.body.errors).toEqual([{ pointer: '/id', detail: `must equal "${agent.id}"` }]);
    const badRef = await admin.put(pa(p, agent.id), aFullAgent({ id: agent.id, defaultSubAgentId: 'ghost' }));
    expect(badRef.status).toBe(422);
    expect(badRef.body.errors[0].pointer).toBe('/defaultSubAgentId');
    const after = await admin.get(pa(p, agent.id));
    expect(after.body).toEqual(before.body);
    expect(after.headers.get('etag')).toBe(before.headers.get('etag'));
  });

  test("when two editors read the same version and both save, then the second gets 412 and the first one's change stays", async () => {
    const p = aProject();
    const agent = await aStoredAgent(admin, p);
    const seenByBoth = await etagOf(p, agent.id);
    const first = await admin.put(
      pa(p, agent.id),
      aFullAgent({ id: agent.id, name: 'First editor' }),
      ifMatch(seenByBoth),
    );
    expect(first.status).toBe(200);
    const second = await admin.put(
      pa(p, agent.id),
      aFullAgent({ id: agent.id, name: 'Second editor' }),
      ifMatch(seenByBoth),
    );
    expect(second.status).toBe(412);
    expect(second.contentType).toMatch(/application\/problem\+json/);
    expect(second.body).toMatchObject({ status: 412, code: 'precondition_failed', title: 'Precondition Failed' });
    const read = await admin.get(pa(p, agent.id));
    expect(read.body.data.name).toBe('First editor');
    expect(read.headers.get('etag')).toBe(first.headers.get('etag'));
    // With the current version the second editor's change goes through.
    expect(
      (
        await admin.put(
          pa(p, agent.id),
          aFullAgent({ id: agent.id, name: 'Second editor' }),
          ifMatch(read.headers.get('etag')!),
        )
      ).status,
    ).toBe(200);
  });

  test('when two editors save the same version at the same moment, then exactly one wins and the other gets 412', async () => {
    const p = aProject();
    const agent = await aStoredAgent(admin, p);
    const seen = await etagOf(p, agent.id);
    const names = ['Editor A', 'Editor B'];
    const results = await Promise.all(
      names.map((name) => admin.put(pa(p, agent.id), aFullAgent({ id: agent.id, name }), ifMatch(seen))),
    );
    expect(results.map((r) => r.status).sort()).toEqual([200, 412]);
    const winner = results.find((r) => r.status === 200)!;
    expect((await admin.get(pa(p, agent.id))).body.data.name).toBe(winner.body.data.name);
  });

  test("when an attachment changed since the editor read the agent, then the editor's PUT gets 412", async () => {
    const p = aProject();
    const agent = await aStoredAgent(admin, p);
    const seen = await etagOf(p, agent.id);
    await attachChart(p, agent.id);
    expect(await etagOf(p, agent.id)).not.toBe(seen);
    expect((await admin.put(pa(p, agent.id), aFullAgent({ id: agent.id }), ifMatch(seen))).status).toBe(412);
    expect((await admin.get(pa(p, agent.id))).body.data.subAgents.writer.dataComponents).toEqual(['chart']);
  });

  test('when If-Match is *, a weak tag or a list, then it is compared as RFC 9110 says', async () => {
    const p = aProject();
    const agent = await aStoredAgent(admin, p);
    const current = await etagOf(p, agent.id);
    expect((await admin.put(pa(p, agent.id), aFullAgent({ id: agent.id }), ifMatch(`W/${current}`))).status).toBe(412);
    const listed = await admin.put(pa(p, agent.id), aFullAgent({ id: agent.id }), ifMatch(`"stale", ${current}`));
    expect(listed.status).toBe(200);
    expect((await admin.put(pa(p, agent.id), aFullAgent({ id: agent.id }), ifMatch('*'))).status).toBe(200);
    // Without If-Match the change applies to whatever is current.
    expect((await admin.put(pa(p, agent.id), aFullAgent({ id: agent.id, name: 'Unconditional' }))).status).toBe(200);
  });

  test('when an improvement merge replaces the definition (the internal replace call), then the ETag moves on and an editor of the old version gets 412', async () => {
    const p = aProject();
    const agent = await aStoredAgent(admin, p);
    const seen = await etagOf(p, agent.id);
    const merged = await internalRequest(replaceAgentDefinition.subject, {
      ...p,
      agentId: agent.id,
      definition: aFullAgent({ id: agent.id, name: 'Merged' }),
      branchName: 'improvement_x',
    });
    expect(merged.ok).toBe(true);
    expect(await etagOf(p, agent.id)).not.toBe(seen);
    expect(
      (await admin.put(pa(p, agent.id), aFullAgent({ id: agent.id, name: 'Stale editor' }), ifMatch(seen))).status,
    ).toBe(412);
    expect((await admin.get(pa(p, agent.id))).body.data.name).toBe('Merged');
  });
});

describe('DELETE PA', () => {
  test('when an agent is deleted, then it is gone with its attachments, triggers and API keys, and agent.deleted reaches webhooks and JetStream', async () => {
    const p = aProject();
    const agent = await aStoredAgent(admin, p);
    const bystander = await aStoredAgent(admin, p);
    const base = pa(p, agent.id);
    await attachChart(p, agent.id);
    expect((await admin.post(`${base}/triggers`, { id: 'nightly', name: 'Nightly' })).status).toBe(201);
    expect((await admin.post(`${pa(p, bystander.id)}/triggers`, { id: 'nightly', name: 'Nightly' })).status).toBe(201);
    const { key, apiKey } = await anApiKey(admin, p, { agentId: agent.id });
    const { key: otherKey } = await anApiKey(admin, p, { agentId: bystander.id });
    const run = client(stack.gatewayUrl, key);
    expect((await run.post('/run/v1/events', { type: 'before.delete' })).status).toBe(201);
    await createDestination(admin, p, { url: receiver.url, eventTypes: ['agent.deleted'] });
    const consumed: Array<EventOf<typeof agentDeleted>> = [];
    await nats.subscribe(
      agentDeleted,
      { durable: uniqueId('agents-crud-test'), tenantId: p.tenantId, projectId: p.projectId },
      (e) => void consumed.push(e),
    );

    const res = await admin.delete(base, ifMatch(await etagOf(p, agent.id)));
    expect(res.status).toBe(204);
    expect(res.body).toBeUndefined();

    expect((await admin.get(base)).status).toBe(404);
    expect((await admin.get(`${projectPath(p)}/agents`)).body.data.map((a: { id: string }) => a.id)).toEqual([
      bystander.id,
    ]);
    expect((await admin.get(`${base}/sub-agent-data-components/agent/writer`)).status).toBe(404);
    expect((await admin.get(`${base}/triggers/nightly`)).status).toBe(404);
    expect((await admin.get(`${base}/triggers`)).body.data).toEqual([]);
    expect((await admin.get(`${projectPath(p)}/api-keys/${apiKey.id}`)).status).toBe(404);
    expect((await run.post('/run/v1/events', { type: 'after.delete' })).status).toBe(401);
    // The other agent keeps its trigger and key.
    expect((await admin.get(`${pa(p, bystander.id)}/triggers/nightly`)).status).toBe(200);
    expect((await client(stack.gatewayUrl, otherKey).post('/run/v1/events', { type: 'still.here' })).status).toBe(201);
    // Deleting again: nothing is there.
    expect((await admin.delete(base)).status).toBe(404);

    const delivered = await eventually(
      () => receiver.received.find((r) => r.json?.type === 'agent.deleted' && r.json?.projectId === p.projectId),
      'agent.deleted delivered',
    );
    expect(delivered.json).toMatchObject({
      type: 'agent.deleted',
      tenantId: p.tenantId,
      agentId: agent.id,
      data: { agent: { id: agent.id, name: 'Support bot', subAgentIds: ['router', 'writer'] } },
    });
    await eventually(() => consumed.length === 1, 'agent.deleted consumed');
    expect(consumed[0]).toMatchObject({
      type: 'agent.deleted',
      tenantId: p.tenantId,
      projectId: p.projectId,
      data: { agent: { id: agent.id } },
    });
  });

  test('when the agent changed since the version in If-Match, then DELETE answers 412 and deletes nothing', async () => {
    const p = aProject();
    const agent = await aStoredAgent(admin, p);
    expect((await admin.post(`${pa(p, agent.id)}/triggers`, { id: 'nightly', name: 'Nightly' })).status).toBe(201);
    const seen = await etagOf(p, agent.id);
    expect((await admin.put(pa(p, agent.id), aFullAgent({ id: agent.id, name: 'Changed' }))).status).toBe(200);
    const res = await admin.delete(pa(p, agent.id), ifMatch(seen));
    expect(res.status).toBe(412);
    expect(res.contentType).toMatch(/application\/problem\+json/);
    expect((await admin.get(pa(p, agent.id))).body.data.name).toBe('Changed');
    expect((await admin.get(`${pa(p, agent.id)}/triggers/nightly`)).status).toBe(200);
  });

  test("when a deleted agent's id is used again, then the new agent starts clean: no old triggers, keys or attachments", async () => {
    const p = aProject();
    const agent = await aStoredAgent(admin, p, { id: 'reused' });
    await attachChart(p, agent.id);
    expect((await admin.post(`${pa(p, agent.id)}/triggers`, { id: 'nightly', name: 'Nightly' })).status).toBe(201);
    const oldEtag = await etagOf(p, agent.id);
    expect((await admin.delete(pa(p, agent.id))).status).toBe(204);
    const again = await admin.post(`${projectPath(p)}/agent`, aFullAgent({ id: 'reused', name: 'Second life' }));
    expect(again.status).toBe(201);
    const read = await admin.get(pa(p, 'reused'));
    expect(read.body.data).toEqual(again.body.data);
    expect(read.body.data.subAgents.writer.dataComponents).toEqual([]);
    expect(read.headers.get('etag')).not.toBe(oldEtag);
    expect((await admin.get(`${pa(p, 'reused')}/triggers`)).body.data).toEqual([]);
    expect((await admin.get(`${projectPath(p)}/agents`)).body.data.map((a: { name: string }) => a.name)).toEqual([
      'Second life',
    ]);
    // A live id is still taken.
    expect((await admin.post(`${projectPath(p)}/agent`, aFullAgent({ id: 'reused' }))).status).toBe(409);
    // available-agents lists the live agent once, by its id.
    const available = await admin.get('/manage/available-agents');
    expect(
      available.body.data
        .filter((a: { projectId: string }) => a.projectId === p.projectId)
        .map((a: { agentId: string }) => a.agentId),
    ).toEqual(['reused']);
  });

  test('when an agent is deleted, then available-agents no longer lists it', async () => {
    const p = aProject();
    const agent = await aStoredAgent(admin, p);
    expect((await admin.delete(pa(p, agent.id))).status).toBe(204);
    const available = await admin.get('/manage/available-agents');
    expect(available.body.data.filter((a: { projectId: string }) => a.projectId === p.projectId)).toEqual([]);
  });
});

describe('tenant isolation', () => {
  test("when another tenant's credential reads, replaces or deletes an agent, then it is refused and the agent is unchanged", async () => {
    const p = aProject();
    const agent = await aStoredAgent(admin, p);
    expect((await admin.post(`${pa(p, agent.id)}/triggers`, { id: 'nightly', name: 'Nightly' })).status).toBe(201);
    const before = await admin.get(pa(p, agent.id));
    const intruder = client(stack.gatewayUrl, await aTenantToken(admin, aProject().tenantId));
    const etag = before.headers.get('etag')!;
    const attempts = [
      await intruder.get(`${projectPath(p)}/agents`),
      await intruder.get(pa(p, agent.id)),
      await intruder.put(pa(p, agent.id), aFullAgent({ id: agent.id, name: 'Hijacked' }), ifMatch(etag)),
      await intruder.delete(pa(p, agent.id), ifMatch(etag)),
    ];
    for (const res of attempts) expect([403, 404]).toContain(res.status);
    const after = await admin.get(pa(p, agent.id));
    expect(after.body).toEqual(before.body);
    expect(after.headers.get('etag')).toBe(etag);
    expect((await admin.get(`${pa(p, agent.id)}/triggers/nightly`)).status).toBe(200);
  });

  test("when a tenant's own token lists agents, then it sees only its project's agents", async () => {
    const p = aProject();
    const other = { tenantId: p.tenantId, projectId: aProject().projectId };
    await aStoredAgent(admin, p, { id: 'mine' });
    await aStoredAgent(admin, other, { id: 'theirs' });
    const own = client(stack.gatewayUrl, await aTenantToken(admin, p.tenantId, 'viewer'));
    const res = await own.get(`${projectPath(p)}/agents`);
    expect(res.status).toBe(200);
    expect(res.body.data.map((a: { id: string }) => a.id)).toEqual(['mine']);
    // A viewer may read but not change.
    expect([403]).toContain((await own.delete(pa(p, 'mine'))).status);
  });
});
