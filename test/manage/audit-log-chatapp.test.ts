import type { NatsConnection } from 'nats';
import { AUDIT_NO_TENANT, auditRecorded } from '@platform/contracts';
import { subscribe, type EventOf } from '@platform/consumer';
import { aProject, client, connectAs, eventually, http, signChatLinkToken, uniqueId } from '@platform/testkit';
import { admin, anInstalledWorkspace, CHAT, fake, stack } from '../support/chatapp';

/**
 * The chat app's changes (`/work-apps/chatapp/…`, made with a management credential) and the credential gateway's key
 * rotation (the platform admin's) are recorded by the service that made them, like the changes served under /manage
 * (docs/security.md, "Audit log"); the chat app's entries appear in the tenant's log.
 */
const auditPath = (tenantId: string, query = '') => `/manage/tenants/${tenantId}/audit-log${query}`;
const tokenId = (token: string) => token.slice(3, 15);
const ua = { 'user-agent': 'audit-chatapp-test/1.0' };
const jsonBody = (v: unknown) => ({ raw: JSON.stringify(v), headers: { 'content-type': 'application/json', ...ua } });
type Entry = Record<string, any>;

/** A management token of the tenant for `userId` with `role`, and a client holding it. */
async function aMember(tenantId: string, role: string, userId: string) {
  const res = await admin.post(`/manage/tenants/${tenantId}/access-tokens`, { name: 'audit chat test', role, userId });
  if (res.status !== 201) throw new Error(`access token: ${res.status} ${JSON.stringify(res.body)}`);
  const token = res.body.data.token as string;
  return { token, c: client(stack.gatewayUrl, token) };
}

/** The tenant's chat app entries, oldest first, once `count` of them are there (they arrive from events). */
async function chatEntries(tenantId: string, count: number): Promise<Entry[]> {
  return eventually(
    async () => {
      const res = await admin.get(auditPath(tenantId, '?limit=100'));
      expect(res.status).toBe(200);
      const chat = (res.body.data as Entry[]).filter((e) => e.service === 'chatapp');
      return chat.length >= count ? chat.slice().reverse() : undefined;
    },
    `${count} audit entries of the chat app`,
    30_000,
    150,
  );
}

describe('audit log of the chat app and the credential gateway', () => {
  test('when a tenant admin makes every kind of chat app change, then each appears once in the tenant log, refused ones as failed with their status, with who, what and from where', async () => {
    const { tenantId, projectId, teamId, ws } = await anInstalledWorkspace([
      { id: 'CGENERAL', name: 'general' },
      { id: 'CSUPPORT', name: 'support' },
    ]);
    const { token, c } = await aMember(tenantId, 'admin', 'owner-1');
    const secret = stack.env.CHATAPP_STATE_SECRET!;
    const agent = { agentId: 'support-bot', projectId };
    const calls: Array<{ operationId: string; status: number; errorCode?: string; resourceId?: string }> = [];
    /** Makes a change through the gateway, expects its status, and notes what its entry must say. */
    const change = async (
      operationId: string,
      status: number,
      res: Promise<{ status: number; body: any }>,
      resourceId?: string,
    ): Promise<{ status: number; body: any }> => {
      const r = await res;
      expect({ operationId, status: r.status }).toEqual({ operationId, status });
      calls.push({
        operationId,
        status,
        ...(status >= 400 ? { errorCode: r.body.code } : {}),
        ...(resourceId ? { resourceId } : {}),
      });
      return r;
    };
    const linkToken = signChatLinkToken(secret, { tenantId, teamId, chatappUserId: 'UCAROL', name: 'carol' });
    const h = { headers: ua };

    const link = await change('chatappCreateInstallLink', 201, c.post(`${CHAT}/install-links`, { projectId }, h));
    const connect = await change('chatappConnectUser', 200, c.post(`${CHAT}/users/connect`, { userId: 'owner-1' }, h));
    const verify = { token: linkToken, userId: 'user-carol' };
    await change('chatappVerifyLinkToken', 200, c.post(`${CHAT}/users/link/verify-token`, verify, h));
    const issued = await change(
      'chatappCreateLinkToken',
      201,
      c.post(`${ws}/link-tokens`, { chatappUserId: 'UDAVE' }, h),
      teamId,
    );
    const carol = { chatappTeamId: teamId, chatappUserId: 'UCAROL' };
    await change('chatappDisconnectUser', 200, c.post(`${CHAT}/users/disconnect`, carol, h));
    const general = `${ws}/channels/CGENERAL/settings`;
    await change('chatappSetChannelAgent', 200, c.put(general, { agentConfig: agent }, h), 'CGENERAL');
    const bulk = { agentConfig: agent, channelIds: ['CSUPPORT'] };
    await change('chatappBulkSetChannelAgents', 200, c.put(`${ws}/channels/bulk`, bulk, h), teamId);
    await change('chatappRemoveChannelAgent', 200, c.delete(general, h), 'CGENERAL');
    const unset = jsonBody({ channelIds: ['CSUPPORT'] });
    await change('chatappBulkRemoveChannelAgents', 200, c.delete(`${ws}/channels/bulk`, unset), teamId);
    await change('chatappUpdateWorkspaceSettings', 200, c.put(`${ws}/settings`, { defaultAgent: agent }, h), teamId);
    const join = { shouldAllowJoinFromWorkspace: true };
    await change('chatappSetJoinFromWorkspace', 200, c.put(`${ws}/join-from-workspace`, join, h), teamId);
    await change('chatappSendTestMessage', 200, c.post(`${ws}/test-message`, { channelId: 'CGENERAL' }, h), teamId);
    // Valid requests the chat app refused or could not carry out: recorded as failed, with their status.
    const unknownAgent = { agentConfig: { ...agent, agentId: 'no-such-agent' } };
    await change('chatappSetChannelAgent', 422, c.put(general, unknownAgent, h), 'CGENERAL');
    const elsewhere = { userId: 'owner-1', tenantId: aProject().tenantId };
    await change('chatappConnectUser', 403, c.post(`${CHAT}/users/connect`, elsewhere, h));
    const nobody = { chatappTeamId: teamId, chatappUserId: 'UNOBODY' };
    await change('chatappDisconnectUser', 404, c.post(`${CHAT}/users/disconnect`, nobody, h));
    await fake.fail(teamId, { method: 'chat.postMessage', error: 'cannot_dm_bot' });
    const dm = { chatappUserId: 'UDAVE', sendDm: true };
    await change('chatappCreateLinkToken', 502, c.post(`${ws}/link-tokens`, dm, h), teamId);
    await change('chatappUninstallWorkspace', 200, c.delete(ws, h), teamId);

    // The platform admin's install link (named this tenant) comes first: the workspace was installed with it.
    const entries = await chatEntries(tenantId, calls.length + 1);
    expect(entries[0]).toMatchObject({
      operationId: 'chatappCreateInstallLink',
      tenantId,
      outcome: 'succeeded',
      actor: { kind: 'admin', role: 'platform-admin', credentialId: 'admin-token' },
    });
    const mine = entries.slice(1);
    // Once each, in the order they were made; the install route, the OAuth callback and reads are not changes.
    expect(mine.map((e) => e.operationId)).toEqual(calls.map((x) => x.operationId));
    mine.forEach((e, i) => {
      const made = calls[i]!;
      expect(e).toMatchObject({
        tenantId,
        projectId: null,
        service: 'chatapp',
        status: made.status,
        outcome: made.status < 400 ? 'succeeded' : 'failed',
        errorCode: made.errorCode ?? null,
        actor: { kind: 'user', userId: 'owner-1', role: 'admin', credentialId: tokenId(token), via: 'bearer' },
        source: { ip: expect.any(String), userAgent: ua['user-agent'], requestId: expect.stringMatching(/.+/) },
        completedAt: expect.any(String),
        ...(made.resourceId ? { resourceId: made.resourceId } : {}),
      });
    });
    expect(mine.filter((e) => e.outcome === 'failed').map((e) => [e.operationId, e.status])).toEqual([
      ['chatappSetChannelAgent', 422],
      ['chatappConnectUser', 403],
      ['chatappDisconnectUser', 404],
      ['chatappCreateLinkToken', 502],
    ]);
    const byOp = (operationId: string) => mine.find((e) => e.operationId === operationId)!;
    // What changed: the workspace as its read answered it before, the reply after.
    expect(byOp('chatappUpdateWorkspaceSettings')).toMatchObject({
      method: 'put',
      resourceType: 'workspaces',
      before: { teamId, tenantId, defaultAgent: null },
      after: { success: true },
    });
    expect(byOp('chatappSetChannelAgent')).toMatchObject({ resourceType: 'channels', after: { success: true } });
    expect(byOp('chatappUninstallWorkspace')).toMatchObject({
      method: 'delete',
      before: { teamId, defaultAgent: { agentId: 'support-bot', projectId } },
      after: null,
    });
    // No token the chat app answered is in the log, not even inside the URLs that carry them.
    expect(byOp('chatappConnectUser').after).toMatchObject({ sessionToken: '[redacted]' });
    const logged = JSON.stringify(entries);
    for (const secret of [
      new URL(link.body.data.url).searchParams.get('link')!,
      connect.body.sessionToken as string,
      issued.body.token as string,
    ])
      expect(logged).not.toContain(secret);
    const failed = await c.get(auditPath(tenantId, '?outcome=failed&limit=100'));
    expect(failed.status).toBe(200);
    expect(failed.body.data.filter((e: Entry) => e.service === 'chatapp')).toHaveLength(4);
  }, 60_000);

  test("when another tenant's admin acts on a workspace that is not theirs, then it is recorded in their own log as failed, and neither log shows the other's entries", async () => {
    const a = await anInstalledWorkspace();
    const b = aProject();
    const ofB = await aMember(b.tenantId, 'admin', 'admin-b');
    expect((await ofB.c.put(`${a.ws}/settings`, { defaultAgent: null }, { headers: ua })).status).toBe(404);
    expect((await ofB.c.delete(a.ws, { headers: ua })).status).toBe(404);
    const ofA = await aMember(a.tenantId, 'admin', 'admin-a');
    expect((await ofA.c.put(`${a.ws}/join-from-workspace`, { shouldAllowJoinFromWorkspace: true })).status).toBe(200);

    const inB = await chatEntries(b.tenantId, 2);
    expect(inB.map((e) => [e.operationId, e.tenantId, e.outcome, e.status, e.resourceId])).toEqual([
      ['chatappUpdateWorkspaceSettings', b.tenantId, 'failed', 404, a.teamId],
      ['chatappUninstallWorkspace', b.tenantId, 'failed', 404, a.teamId],
    ]);
    const inA = await chatEntries(a.tenantId, 2);
    expect(inA.map((e) => e.operationId)).toEqual(['chatappCreateInstallLink', 'chatappSetJoinFromWorkspace']);
    const logOfB = await ofB.c.get(auditPath(b.tenantId, '?limit=100'));
    expect(JSON.stringify(logOfB.body)).not.toContain(a.tenantId);
    expect((await ofB.c.get(auditPath(a.tenantId))).status).toBe(403);
    // The workspace is still installed and unchanged.
    expect((await admin.get(a.ws)).body).toMatchObject({ tenantId: a.tenantId, defaultAgent: null });
  });

  test("when the platform admin changes a tenant's workspace, then it is in that tenant's log; its key rotation is in no tenant's log but published under the platform token, and token exchanges are not recorded", async () => {
    const { tenantId, projectId, ws } = await anInstalledWorkspace();
    const got: Array<EventOf<typeof auditRecorded>> = [];
    const nc: NatsConnection = await connectAs(stack.env.NATS_URL!, 'admin');
    const sub = await subscribe(
      nc,
      auditRecorded,
      { durable: uniqueId('audit-platform').replace(/\./g, '_'), tenantId: AUDIT_NO_TENANT, deliverPolicy: 'new' },
      (e) => void got.push(e),
    );
    try {
      const settings = await admin.put(`${ws}/settings`, { defaultAgent: { agentId: 'helper', projectId } });
      expect(settings.status).toBe(200);
      const [, byAdmin] = await chatEntries(tenantId, 2);
      expect(byAdmin).toMatchObject({
        operationId: 'chatappUpdateWorkspaceSettings',
        tenantId,
        outcome: 'succeeded',
        actor: { kind: 'admin', userId: null, role: 'platform-admin', credentialId: 'admin-token' },
      });

      // A token exchange reaches the credential gateway (and is refused there): the product's traffic, not a change.
      const exchange = await http('POST', `${stack.gatewayUrl}/credential-gateway/token`, {
        raw: new URLSearchParams({
          grant_type: 'urn:ietf:params:oauth:grant-type:token-exchange',
          subject_token: 'not-a-token',
          subject_token_type: 'urn:ietf:params:oauth:token-type:access_token',
          audience: 'helpdesk',
          svc_app_id: 'app-none',
        }).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(exchange.status).toBeGreaterThanOrEqual(400);
      expect(exchange.status).toBeLessThan(500);
      const rotated = await admin.post('/credential-gateway/signing-keys/rotate', undefined, { headers: ua });
      expect(rotated.status).toBe(201);
      // Other tests rotate too: this rotation is the one whose entry names the new key.
      const ours = () =>
        got.filter(
          (x) =>
            x.data.entry.operationId === 'rotateCredentialGatewayKey' &&
            (x.data.entry.after as { kid?: string } | null)?.kid === rotated.body.data.kid,
        );
      const e = await eventually(() => ours()[0], 'the audit.recorded event of the key rotation');
      expect(e).toMatchObject({
        tenantId: AUDIT_NO_TENANT,
        data: {
          entry: {
            tenantId: null,
            projectId: null,
            service: 'credential-gateway',
            method: 'post',
            outcome: 'succeeded',
            status: 201,
            actor: { kind: 'admin', role: 'platform-admin', credentialId: 'admin-token', via: 'bearer' },
            source: { userAgent: ua['user-agent'] },
            after: { kid: rotated.body.data.kid },
          },
        },
      });
      expect(ours()).toHaveLength(1);
      // The exchange was made before the rotation, by the same service: its entry, were there one, would be here.
      expect(got.filter((x) => x.data.entry.operationId === 'exchangeToken')).toEqual([]);
      const log = await admin.get(auditPath(tenantId, '?limit=100'));
      expect(log.body.data.map((x: Entry) => x.operationId)).not.toContain('rotateCredentialGatewayKey');
    } finally {
      await sub.stop(1000);
      await nc.drain();
    }
  });
});
