import { auditRecorded } from '@platform/contracts';
import type { EventOf } from '@platform/consumer';
import {
  aProject,
  aProjectWithAgents,
  aTenantToken,
  client,
  eventually,
  http,
  projectPath,
  uniqueId,
} from '@platform/testkit';
import { admin, stack } from '../support/stack';
import { adminNats } from '../support/connections';

const nats = adminNats(stack);

const auditPath = (tenantId: string, query = '') => `/manage/tenants/${tenantId}/audit-log${query}`;
const tokenId = (token: string) => token.slice(3, 15);

/** The tenant's whole audit log, oldest first. */
async function logOf(tenantId: string, query = '') {
  const res = await admin.get(auditPath(tenantId, `?limit=100${query}`));
  expect(res.status).toBe(200);
  return (res.body.data as any[]).slice().reverse();
}

describe('audit log', () => {
  test('when an owner makes each kind of change, then each is recorded once with who, what, from where and the outcome, and no secret', async () => {
    // The key's agent is made by the admin first (keys are refused for an agent that does not exist).
    const p = await aProjectWithAgents(admin);
    const owner = await aTenantToken(admin, p.tenantId, 'owner');
    const c = client(stack.gatewayUrl, owner);
    const ua = { 'user-agent': 'audit-test/1.0' };
    const P = projectPath(p);

    const created = await c.post(`${P}/api-keys`, { agentId: 'agent-1', name: 'first' }, { headers: ua });
    expect(created.status).toBe(201);
    const keyId = created.body.data.apiKey.id as string;
    expect((await c.patch(`${P}/api-keys/${keyId}`, { name: 'second' }, { headers: ua })).status).toBe(200);
    expect((await c.delete(`${P}/api-keys/${keyId}`, { headers: ua })).status).toBe(204);
    const hook = await c.post(
      `${P}/webhook-destinations`,
      { name: 'hook', url: 'https://hooks.example.com/a', eventTypes: ['conversation.tool.error'] },
      { headers: ua },
    );
    expect(hook.status).toBe(201);
    const hookId = hook.body.data.id as string;
    expect((await c.post(`${P}/webhook-destinations/${hookId}/rotate-secret`, undefined, { headers: ua })).status).toBe(
      200,
    );
    const issued = await c.post(
      `/manage/tenants/${p.tenantId}/access-tokens`,
      { name: 'ci', role: 'viewer' },
      { headers: ua },
    );
    expect(issued.status).toBe(201);
    const issuedId = issued.body.data.accessToken.id as string;
    expect((await c.delete(`/manage/tenants/${p.tenantId}/access-tokens/${issuedId}`, { headers: ua })).status).toBe(
      204,
    );
    const session = await http('POST', `${stack.gatewayUrl}/manage/auth/session`, { token: owner, headers: ua });
    expect(session.status).toBe(201);
    const cookie = (session.headers.get('set-cookie') ?? '').split(';')[0]!;
    expect(
      (await http('DELETE', `${stack.gatewayUrl}/manage/auth/session`, { cookie, headers: ua })).status,
    ).toBeLessThan(300);

    const entries = await logOf(p.tenantId);
    // The agent and the owner's own token were made by the admin before: those entries come first.
    expect(entries[0]).toMatchObject({
      operationId: 'createFullAgent',
      actor: { kind: 'admin', credentialId: 'admin-token' },
      outcome: 'succeeded',
    });
    expect(entries[1]).toMatchObject({
      operationId: 'createAccessToken',
      actor: { kind: 'admin', credentialId: 'admin-token' },
      outcome: 'succeeded',
    });
    const mine = entries.slice(2);
    expect(mine.map((e) => e.operationId)).toEqual([
      'createApiKey',
      'updateApiKey',
      'deleteApiKey',
      'createWebhookDestination',
      'rotateWebhookDestinationSecret',
      'createAccessToken',
      'deleteAccessToken',
      'createSession',
      'deleteSession',
    ]);
    for (const e of mine) {
      expect(e).toMatchObject({
        tenantId: p.tenantId,
        outcome: 'succeeded',
        actor: { kind: 'user', role: 'owner', credentialId: expect.any(String) },
        source: { ip: expect.any(String), userAgent: 'audit-test/1.0', requestId: expect.stringMatching(/.+/) },
        completedAt: expect.any(String),
      });
      expect(e.status).toBeLessThan(300);
    }
    expect(mine.slice(0, 7).every((e) => e.actor.credentialId === tokenId(owner))).toBe(true);
    expect(mine[0]).toMatchObject({
      resourceType: 'api-keys',
      resourceId: keyId,
      projectId: p.projectId,
      before: null,
      after: { apiKey: { id: keyId, name: 'first' }, key: '[redacted]' },
    });
    expect(mine[1]).toMatchObject({
      resourceId: keyId,
      before: { id: keyId, name: 'first' },
      after: { id: keyId, name: 'second' },
    });
    expect(mine[2]).toMatchObject({
      resourceId: keyId,
      method: 'delete',
      before: { name: 'second' },
      after: null,
      status: 204,
    });
    expect(mine[4]).toMatchObject({ resourceType: 'webhook-destinations', resourceId: hookId });
    expect(mine[5]).toMatchObject({ resourceType: 'access-tokens', resourceId: issuedId, projectId: null });
    expect(mine[6]).toMatchObject({ resourceId: issuedId, before: null });
    // The session's end names the session it ended (the cookie's credential id), never the cookie.
    expect(mine[8].actor.via).toBe('cookie');
    expect(mine[8].actor.credentialId).not.toBe(tokenId(owner));

    const text = JSON.stringify(entries);
    expect(text).not.toContain(created.body.data.key.split('.')[1]);
    expect(text).not.toContain(issued.body.data.token.split('.')[1]);
    expect(text).not.toContain(owner.split('.')[1]);
    expect(text).not.toContain(cookie.split('=')[1]);
  }, 30_000);

  test('when a change fails, then it is recorded once as failed with its status and nothing else is recorded', async () => {
    const p = aProject();
    const res = await admin.delete(`${projectPath(p)}/api-keys/missing-1`);
    expect(res.status).toBe(404);
    const entries = await logOf(p.tenantId);
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({
      operationId: 'deleteApiKey',
      resourceId: 'missing-1',
      outcome: 'failed',
      status: 404,
      errorCode: 'not_found',
      after: null,
    });
  });

  test('when the log is filtered by operation, resource, actor and time and paged, then only matching entries come back', async () => {
    const p = await aProjectWithAgents(admin);
    const owner = await aTenantToken(admin, p.tenantId, 'owner');
    const c = client(stack.gatewayUrl, owner);
    const ids: string[] = [];
    for (const name of ['a', 'b', 'c'])
      ids.push((await c.post(`${projectPath(p)}/api-keys`, { agentId: 'agent-1', name })).body.data.apiKey.id);
    const byOp = await c.get(auditPath(p.tenantId, '?operationId=createApiKey&limit=2'));
    expect(byOp.status).toBe(200);
    expect(byOp.body.data).toHaveLength(2);
    expect(byOp.body.pagination).toMatchObject({ page: 1, limit: 2, total: 3, pages: 2 });
    expect(byOp.body.data.map((e: any) => e.resourceId)).toEqual([ids[2], ids[1]]);
    const page2 = await c.get(auditPath(p.tenantId, '?operationId=createApiKey&limit=2&page=2'));
    expect(page2.body.data.map((e: any) => e.resourceId)).toEqual([ids[0]]);
    const byResource = await c.get(auditPath(p.tenantId, `?resourceId=${ids[1]}`));
    expect(byResource.body.data.map((e: any) => e.resourceId)).toEqual([ids[1]]);
    const byActor = await c.get(auditPath(p.tenantId, `?actorId=${tokenId(owner)}`));
    expect(byActor.body.pagination.total).toBe(3);
    const byAdmin = await c.get(auditPath(p.tenantId, '?actorId=admin-token'));
    expect(byAdmin.body.data.map((e: any) => e.operationId)).toEqual(['createAccessToken', 'createFullAgent']);
    const future = new Date(Date.now() + 3600_000).toISOString();
    expect((await c.get(auditPath(p.tenantId, `?from=${encodeURIComponent(future)}`))).body.data).toEqual([]);
    expect((await c.get(auditPath(p.tenantId, `?to=${encodeURIComponent(future)}`))).body.pagination.total).toBe(5);
  });

  test("when another tenant, a member or bad input asks for a tenant's log, then it is refused and sees none of its entries", async () => {
    const a = await aProjectWithAgents(admin);
    const b = aProject();
    expect((await admin.post(`${projectPath(a)}/api-keys`, { agentId: 'agent-1', name: 'of-a' })).status).toBe(201);
    const ownerOfB = await aTenantToken(admin, b.tenantId, 'owner');
    const asB = client(stack.gatewayUrl, ownerOfB);
    const refused = await asB.get(auditPath(a.tenantId));
    expect(refused.status).toBe(403);
    expect(refused.contentType).toMatch(/application\/problem\+json/);
    const own = await asB.get(auditPath(b.tenantId, '?limit=100'));
    expect(own.status).toBe(200);
    expect(own.body.data.every((e: any) => e.tenantId === b.tenantId)).toBe(true);
    expect(JSON.stringify(own.body)).not.toContain(a.tenantId);

    const member = client(stack.gatewayUrl, await aTenantToken(admin, a.tenantId, 'member'));
    expect((await member.get(auditPath(a.tenantId))).status).toBe(403);
    const adminOfA = client(stack.gatewayUrl, await aTenantToken(admin, a.tenantId, 'admin'));
    expect((await adminOfA.get(auditPath(a.tenantId))).status).toBe(200);

    const bad = await adminOfA.get(auditPath(a.tenantId, '?from=yesterday&outcome=maybe'));
    expect(bad.status).toBe(400);
    expect(bad.contentType).toMatch(/application\/problem\+json/);
    expect(bad.body.errors.map((e: any) => e.pointer).sort()).toEqual(['#query/from', '#query/outcome']);
  });

  test('when a change is recorded, then an audit.recorded event with the completed entry reaches a typed consumer of the tenant', async () => {
    const p = await aProjectWithAgents(admin);
    const got: Array<EventOf<typeof auditRecorded>> = [];
    await nats.subscribe(
      auditRecorded,
      { durable: uniqueId('audit-test').replace(/\./g, '_'), tenantId: p.tenantId, deliverPolicy: 'new' },
      (e) => void got.push(e),
    );
    const res = await admin.post(`${projectPath(p)}/api-keys`, { agentId: 'agent-1', name: 'evented' });
    expect(res.status).toBe(201);
    const entry = (await logOf(p.tenantId)).find((e) => e.operationId === 'createApiKey');
    const e = await eventually(() => got.find((x) => x.id === entry.id), 'the audit.recorded event');
    expect(e).toMatchObject({ type: 'audit.recorded', tenantId: p.tenantId, projectId: p.projectId, data: { entry } });
    expect(got.filter((x) => x.id === entry.id)).toHaveLength(1);
  });
});
