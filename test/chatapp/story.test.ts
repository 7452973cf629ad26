import { completeLinkSession, postChannelMessage } from '@platform/contracts';
import { aProject, installChatWorkspace, requestSubject } from '@platform/testkit';
import { CHAT, fake, stack, tenantClient, withChatAgents } from '../support/chatapp';

describe('the chat-app integration, end to end through the gateway', () => {
  test('when a workspace is installed, configured, linked and used, then uninstalling it removes it all', async () => {
    const p = await withChatAgents(aProject());
    const team = await fake.createTeam({
      teamName: 'Acme Chat',
      channels: [
        { id: 'CSUPPORT1', name: 'support', memberCount: 12 },
        { id: 'CPRIVATE1', name: 'leads', isPrivate: true, memberCount: 3 },
      ],
    });
    const owner = await tenantClient(p.tenantId, 'admin', 'owner-1');
    const alice = await tenantClient(p.tenantId, 'member', 'user-alice');

    // 1. install → the chat product's authorize page → OAuth redirect → the result page
    const { authorizeUrl, result } = await installChatWorkspace(stack.gatewayUrl, {
      token: stack.adminToken,
      tenantId: p.tenantId,
      projectId: p.projectId,
      teamId: team.teamId,
    });
    expect(authorizeUrl.searchParams.get('client_id')).toBeTruthy();
    expect(authorizeUrl.searchParams.get('scope')).toContain('chat:write');
    expect(result.searchParams.get('success')).toBe('true');
    expect(result.searchParams.get('workspace')).toBe('Acme Chat');
    expect(result.searchParams.get('teamId')).toBe(team.teamId);
    expect(await fake.calls(team.teamId, 'oauth.v2.access')).toHaveLength(1);

    // 2. the workspace is listed for its tenant
    const listed = await owner.get(`${CHAT}/workspaces`);
    expect(listed.status).toBe(200);
    expect(listed.body.workspaces).toEqual([
      expect.objectContaining({
        teamId: team.teamId,
        teamName: 'Acme Chat',
        tenantId: p.tenantId,
        hasDefaultAgent: false,
        defaultAgentName: null,
        teamDomain: team.domain,
      }),
    ]);
    const got = await owner.get(`${CHAT}/workspaces/${team.teamId}`);
    expect(got.body).toEqual({
      connectionId: listed.body.workspaces[0].connectionId,
      defaultAgent: null,
      teamId: team.teamId,
      teamName: 'Acme Chat',
      tenantId: p.tenantId,
    });

    // 3. a channel answers with an agent
    const set = await owner.put(`${CHAT}/workspaces/${team.teamId}/channels/CSUPPORT1/settings`, {
      agentConfig: { agentId: 'support-bot', projectId: p.projectId },
    });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ configId: expect.any(String), success: true });
    const channels = await owner.get(`${CHAT}/workspaces/${team.teamId}/channels`);
    expect(channels.status).toBe(200);
    expect(channels.body).toEqual({
      channels: [
        {
          id: 'CSUPPORT1',
          name: 'support',
          isPrivate: false,
          isShared: false,
          memberCount: 12,
          hasAgentConfig: true,
          agentConfig: { agentId: 'support-bot', grantAccessToMembers: false, projectId: p.projectId },
        },
        {
          id: 'CPRIVATE1',
          name: 'leads',
          isPrivate: true,
          isShared: false,
          memberCount: 3,
          hasAgentConfig: false,
          agentConfig: null,
        },
      ],
      nextCursor: null,
    });

    // 4. a chat user asks to link; the bot sends them a link token; the platform user presents it
    const issued = await owner.post(`${CHAT}/workspaces/${team.teamId}/link-tokens`, {
      chatappUserId: 'UALICE',
      chatappUsername: 'alice',
      sendDm: true,
    });
    expect(issued.status).toBe(201);
    const dm = (await fake.messages(team.teamId)).find((m) => m.channel === 'UALICE');
    expect(dm?.text).toContain(issued.body.linkUrl);
    const verified = await alice.post(`${CHAT}/users/link/verify-token`, {
      token: issued.body.token,
      userId: 'user-alice',
      userEmail: 'alice@example.com',
    });
    expect(verified.status).toBe(200);
    expect(verified.body).toEqual({
      linkId: expect.any(String),
      chatappTeamId: team.teamId,
      chatappUsername: 'alice',
      success: true,
      tenantId: p.tenantId,
    });
    const status = await alice.get(`${CHAT}/users/link-status?chatappUserId=UALICE&chatappTeamId=${team.teamId}`);
    expect(status.body).toEqual({
      linkId: verified.body.linkId,
      linked: true,
      linkedAt: expect.any(String),
      chatappUsername: 'alice',
    });
    const userStatus = await alice.get(`${CHAT}/users/status?userId=user-alice`);
    expect(userStatus.body).toMatchObject({
      connected: true,
      connection: {
        appUserId: 'user-alice',
        appUserEmail: 'alice@example.com',
        chatappTeamId: team.teamId,
        chatappUserId: 'UALICE',
        tenantId: p.tenantId,
      },
    });
    const linkedUsers = await owner.get(`${CHAT}/workspaces/${team.teamId}/users`);
    expect(linkedUsers.body.linkedUsers).toEqual([
      {
        id: verified.body.linkId,
        lastUsedAt: null,
        linkedAt: expect.any(String),
        chatappEmail: null,
        chatappTeamId: team.teamId,
        chatappUserId: 'UALICE',
        chatappUsername: 'alice',
        userId: 'user-alice',
      },
    ]);

    // 5. an event of a webhook destination with chatappChannelId is posted to the channel
    const posted = await requestSubject(stack.env.NATS_URL!, postChannelMessage.subject, {
      tenantId: p.tenantId,
      projectId: p.projectId,
      channelId: 'CSUPPORT1',
      text: 'conversation.created: a new conversation started',
      payload: { type: 'conversation.created' },
    });
    expect(posted).toEqual({ ok: true, status: 200, body: { ok: true, messageTs: expect.any(String) } });
    const inChannel = (await fake.messages(team.teamId)).filter((m) => m.channel === 'CSUPPORT1');
    expect(inChannel).toEqual([
      { channel: 'CSUPPORT1', text: 'conversation.created: a new conversation started', ts: posted.body.messageTs },
    ]);

    // 6. uninstall revokes the bot token and removes the installation, channel settings and links
    const removed = await owner.delete(`${CHAT}/workspaces/${team.teamId}`);
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ success: true });
    expect(await fake.calls(team.teamId, 'auth.revoke')).toHaveLength(1);
    expect((await fake.tokens(team.teamId)).every((t) => t.revoked)).toBe(true);
    expect((await owner.get(`${CHAT}/workspaces`)).body.workspaces).toEqual([]);
    expect((await owner.get(`${CHAT}/workspaces/${team.teamId}`)).status).toBe(404);
    expect((await owner.get(`${CHAT}/workspaces/${team.teamId}/channels/CSUPPORT1/settings`)).status).toBe(404);
    expect(
      (await alice.get(`${CHAT}/users/link-status?chatappUserId=UALICE&chatappTeamId=${team.teamId}`)).body.linked,
    ).toBe(false);
    const afterUninstall = await requestSubject(stack.env.NATS_URL!, postChannelMessage.subject, {
      tenantId: p.tenantId,
      projectId: p.projectId,
      channelId: 'CSUPPORT1',
      text: 'late',
    });
    expect(afterUninstall.body).toEqual({ ok: false, error: 'no_workspace' });

    // and a reinstall starts clean: no channel settings come back
    await installChatWorkspace(stack.gatewayUrl, {
      token: stack.adminToken,
      tenantId: p.tenantId,
      projectId: p.projectId,
      teamId: team.teamId,
    });
    const again = await owner.get(`${CHAT}/workspaces/${team.teamId}/channels/CSUPPORT1/settings`);
    expect(again.body).toEqual({ agentConfig: null, channelId: 'CSUPPORT1' });
  });

  test('when a platform user starts a link with connect and the bot completes it, then the user is connected', async () => {
    const p = aProject();
    const team = await fake.createTeam();
    await installChatWorkspace(stack.gatewayUrl, {
      token: stack.adminToken,
      tenantId: p.tenantId,
      teamId: team.teamId,
    });
    const bob = await tenantClient(p.tenantId, 'member', 'user-bob');

    const connect = await bob.post(`${CHAT}/users/connect`, {
      userId: 'user-bob',
      userEmail: 'bob@example.com',
      userName: 'Bob',
    });
    expect(connect.status).toBe(200);
    expect(new URL(connect.body.connectUrl).searchParams.get('session')).toBe(connect.body.sessionToken);

    const done = await requestSubject(stack.env.NATS_URL!, completeLinkSession.subject, {
      sessionToken: connect.body.sessionToken,
      chatappTeamId: team.teamId,
      chatappUserId: 'UBOB',
      chatappUsername: 'bob',
    });
    expect(done).toEqual({
      ok: true,
      status: 200,
      body: { linkId: expect.any(String), userId: 'user-bob', tenantId: p.tenantId },
    });
    const status = await bob.get(`${CHAT}/users/status?userId=user-bob`);
    expect(status.body).toMatchObject({
      connected: true,
      connection: {
        appUserId: 'user-bob',
        appUserEmail: 'bob@example.com',
        chatappUserId: 'UBOB',
        chatappDisplayName: 'bob',
      },
    });

    const replay = await requestSubject(stack.env.NATS_URL!, completeLinkSession.subject, {
      sessionToken: connect.body.sessionToken,
      chatappTeamId: team.teamId,
      chatappUserId: 'UMALLORY',
    });
    expect(replay).toMatchObject({
      ok: false,
      problem: { status: 410, detail: 'The link session was already used; ask for a new one' },
    });

    const off = await bob.post(`${CHAT}/users/disconnect`, { userId: 'user-bob' });
    expect(off.body).toEqual({ success: true });
    expect((await bob.get(`${CHAT}/users/status?userId=user-bob`)).body).toEqual({
      connected: false,
      connection: null,
    });
  });
});
