import { aProject, client, installChatWorkspace } from '@platform/testkit';
import { admin, anInstalledWorkspace, CHAT, fake, stack, tenantClient } from '../support/chatapp';

const channels = [
  { id: 'CGENERAL', name: 'general', memberCount: 40 },
  { id: 'CSUPPORT', name: 'support', memberCount: 12, isShared: true },
  { id: 'CSECRET', name: 'secret', isPrivate: true, memberCount: 2 },
];
const jsonBody = (v: unknown) => ({ raw: JSON.stringify(v), headers: { 'content-type': 'application/json' } });
const agent = (projectId: string, agentId = 'support-bot') => ({ agentId, projectId });

describe('chat workspaces', () => {
  test('when a teamId does not match ^T[A-Z0-9]+$, then every workspace route answers 400 naming the teamId', async () => {
    for (const [method, path] of [
      ['get', `${CHAT}/workspaces/t123`],
      ['delete', `${CHAT}/workspaces/X123`],
      ['get', `${CHAT}/workspaces/T12a/channels`],
      ['get', `${CHAT}/workspaces/team/users`],
      ['get', `${CHAT}/workspaces/t1/health`],
      ['get', `${CHAT}/workspaces/t1/settings`],
      ['get', `${CHAT}/workspaces/t1/join-from-workspace`],
      ['get', `${CHAT}/workspaces/t1/channels/C1/settings`],
    ] as const) {
      const res = await admin[method](path);
      expect(res.status).toBe(400);
      expect(res.contentType).toContain('application/problem+json');
      expect(res.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ pointer: '#params/teamId' })]));
    }
    const put = await admin.put(`${CHAT}/workspaces/t1/channels/C1/settings`, { agentConfig: agent('p1') });
    expect(put.status).toBe(400);
  });

  test('when a workspace is not installed or belongs to another tenant, then it is 404 for that tenant and visible to the platform admin', async () => {
    const { teamId, tenantId } = await anInstalledWorkspace();
    const other = await tenantClient(aProject().tenantId, 'admin', 'someone');
    expect((await other.get(`${CHAT}/workspaces/${teamId}`)).status).toBe(404);
    expect((await other.get(`${CHAT}/workspaces/${teamId}/channels`)).status).toBe(404);
    expect((await other.delete(`${CHAT}/workspaces/${teamId}`)).status).toBe(404);
    expect((await other.get(`${CHAT}/workspaces`)).body).toEqual({ workspaces: [] });
    expect((await other.get(`${CHAT}/workspaces?tenantId=${tenantId}`)).status).toBe(403);
    expect((await admin.get(`${CHAT}/workspaces/${teamId}`)).body.tenantId).toBe(tenantId);
    expect((await admin.get(`${CHAT}/workspaces/TNOTINSTALLED`)).status).toBe(404);
  });

  test('when a caller has no credential or too small a role, then it is 401 or 403 and nothing changes', async () => {
    const { ws, tenantId, projectId } = await anInstalledWorkspace(channels);
    const anonymous = client(stack.gatewayUrl);
    expect((await anonymous.get(`${CHAT}/workspaces`)).status).toBe(401);
    const viewer = await tenantClient(tenantId, 'viewer', 'v1');
    expect((await viewer.get(ws)).status).toBe(200);
    const denied = await viewer.put(`${ws}/channels/CGENERAL/settings`, { agentConfig: agent(projectId) });
    expect(denied.status).toBe(403);
    expect((await viewer.get(`${ws}/channels/CGENERAL/settings`)).body.agentConfig).toBeNull();
    expect((await viewer.delete(ws)).status).toBe(403);
  });

  test('when channels are listed, then they come from the chat product page by page with our settings merged', async () => {
    const { ws, owner, projectId, teamId } = await anInstalledWorkspace(channels);
    await owner.put(`${ws}/channels/CSUPPORT/settings`, {
      agentConfig: { ...agent(projectId), grantAccessToMembers: true },
    });
    const first = await owner.get(`${ws}/channels?limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.channels).toEqual([
      {
        id: 'CGENERAL',
        name: 'general',
        isPrivate: false,
        isShared: false,
        memberCount: 40,
        hasAgentConfig: false,
        agentConfig: null,
      },
      {
        id: 'CSUPPORT',
        name: 'support',
        isPrivate: false,
        isShared: true,
        memberCount: 12,
        hasAgentConfig: true,
        agentConfig: { agentId: 'support-bot', grantAccessToMembers: true, projectId },
      },
    ]);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const second = await owner.get(`${ws}/channels?limit=2&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    expect(second.body).toEqual({
      channels: [expect.objectContaining({ id: 'CSECRET', isPrivate: true })],
      nextCursor: null,
    });
    const publicOnly = await owner.get(`${ws}/channels?types=public_channel`);
    expect(publicOnly.body.channels.map((c: { id: string }) => c.id)).toEqual(['CGENERAL', 'CSUPPORT']);
    const [call] = (await fake.calls(teamId, 'conversations.list')).slice(-1);
    expect(call!.params).toMatchObject({ types: 'public_channel', limit: '100' });
  });

  test('when the channel query is bad, then it answers 400', async () => {
    const { ws, owner } = await anInstalledWorkspace();
    expect((await owner.get(`${ws}/channels?limit=0`)).status).toBe(400);
    expect((await owner.get(`${ws}/channels?limit=5000`)).status).toBe(400);
    expect((await owner.get(`${ws}/channels?types=everything`)).status).toBe(400);
    // The chat product refuses a cursor it never gave ("invalid_cursor"): the caller's mistake, 400 and not 502.
    const badCursor = await owner.get(`${ws}/channels?cursor=${Buffer.from('not-a-cursor').toString('base64')}`);
    expect(badCursor.status).toBe(400);
    expect(badCursor.contentType).toMatch(/application\/problem\+json/);
    expect(badCursor.body.errors).toEqual([{ pointer: '/query/cursor', detail: 'not a cursor of this list' }]);
  });

  test('when the chat product refuses to list channels, then it answers 502 naming the chat error', async () => {
    const { ws, owner, teamId } = await anInstalledWorkspace();
    await fake.fail(teamId, { method: 'conversations.list', error: 'missing_scope' });
    const res = await owner.get(`${ws}/channels`);
    expect(res.status).toBe(502);
    expect(res.contentType).toContain('application/problem+json');
    expect(res.body).toMatchObject({
      status: 502,
      code: 'bad_gateway',
      chatError: 'missing_scope',
      detail: 'The chat product answered conversations.list with the error "missing_scope"',
    });
    await fake.fail(teamId, { method: 'conversations.list', httpStatus: 500 });
    const down = await owner.get(`${ws}/channels`);
    expect(down.status).toBe(502);
    expect(down.body.chatError).toBe('http_500');
  });

  test('when a channel agent is set, read and removed, then each step is visible and a second removal is 404', async () => {
    const { ws, owner, projectId } = await anInstalledWorkspace(channels);
    const empty = await owner.get(`${ws}/channels/CGENERAL/settings`);
    expect(empty.body).toEqual({ agentConfig: null, channelId: 'CGENERAL' });
    const set = await owner.put(`${ws}/channels/CGENERAL/settings`, {
      agentConfig: agent(projectId),
      channelName: 'general',
      channelType: 'public_channel',
    });
    expect(set.body).toEqual({ configId: expect.any(String), success: true });
    const again = await owner.put(`${ws}/channels/CGENERAL/settings`, { agentConfig: agent(projectId, 'other-bot') });
    expect(again.body.configId).toBe(set.body.configId);
    expect((await owner.get(`${ws}/channels/CGENERAL/settings`)).body).toEqual({
      agentConfig: { agentId: 'other-bot', grantAccessToMembers: false, projectId },
      channelId: 'CGENERAL',
    });
    expect((await owner.delete(`${ws}/channels/CGENERAL/settings`)).body).toEqual({ success: true });
    expect((await owner.get(`${ws}/channels/CGENERAL/settings`)).body.agentConfig).toBeNull();
    const twice = await owner.delete(`${ws}/channels/CGENERAL/settings`);
    expect(twice.status).toBe(404);
  });

  test('when a channel agent names a missing agent, an unknown channel or a bad body, then it answers 422, 404 or 400 and stores nothing', async () => {
    const { ws, owner, projectId, teamId } = await anInstalledWorkspace(channels);
    const missing = await owner.put(`${ws}/channels/CGENERAL/settings`, {
      agentConfig: agent(projectId, 'missing-agent'),
    });
    expect(missing.status).toBe(422);
    expect(missing.body.errors).toEqual([
      { pointer: '/agentConfig/agentId', detail: `Agent "missing-agent" does not exist in project "${projectId}"` },
    ]);
    const unknown = await owner.put(`${ws}/channels/CNOSUCH/settings`, { agentConfig: agent(projectId) });
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail).toContain('channel_not_found');
    for (const body of [
      {},
      { agentConfig: { agentId: 'a' } },
      { agentConfig: { agentId: 'a', projectId: 'Bad Project' } },
      { agentConfig: agent(projectId), extra: 1 },
    ]) {
      expect((await owner.put(`${ws}/channels/CGENERAL/settings`, body)).status).toBe(400);
    }
    await fake.fail(teamId, { method: 'conversations.info', error: 'ratelimited' });
    const refused = await owner.put(`${ws}/channels/CGENERAL/settings`, { agentConfig: agent(projectId) });
    expect(refused.status).toBe(502);
    expect(refused.body.chatError).toBe('ratelimited');
    expect((await owner.get(`${ws}/channels/CGENERAL/settings`)).body.agentConfig).toBeNull();
    expect((await owner.get(`${ws}/channels/CNOSUCH/settings`)).body.agentConfig).toBeNull();
  });

  test('when channels are set in bulk, then the known ones are set and each refused channel is reported', async () => {
    const { ws, owner, projectId } = await anInstalledWorkspace(channels);
    const res = await owner.put(`${ws}/channels/bulk`, {
      agentConfig: agent(projectId),
      channelIds: ['CGENERAL', 'CNOPE', 'CSUPPORT', 'CGENERAL'],
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      errors: [{ channelId: 'CNOPE', error: 'channel_not_found' }],
      failed: 1,
      success: false,
      updated: 2,
    });
    const listed = await owner.get(`${ws}/channels`);
    expect(
      listed.body.channels
        .filter((c: { hasAgentConfig: boolean }) => c.hasAgentConfig)
        .map((c: { id: string }) => c.id),
    ).toEqual(['CGENERAL', 'CSUPPORT']);

    const all = await owner.put(`${ws}/channels/bulk`, {
      agentConfig: agent(projectId, 'next-bot'),
      channelIds: ['CSECRET'],
    });
    expect(all.body).toEqual({ errors: [], failed: 0, success: true, updated: 1 });

    const removed = await owner.delete(
      `${ws}/channels/bulk`,
      jsonBody({ channelIds: ['CGENERAL', 'CSECRET', 'CNOPE'] }),
    );
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ removed: 2, success: true });
    expect((await owner.get(`${ws}/channels/CSUPPORT/settings`)).body.agentConfig).toMatchObject({
      agentId: 'support-bot',
    });
  });

  test('when a bulk request is empty, names a missing agent or the chat product is down, then nothing is written', async () => {
    const { ws, owner, projectId, teamId } = await anInstalledWorkspace(channels);
    const emptyPut = await owner.put(`${ws}/channels/bulk`, { agentConfig: agent(projectId), channelIds: [] });
    expect(emptyPut.status).toBe(400);
    expect(emptyPut.body.errors).toEqual([expect.objectContaining({ pointer: '/channelIds' })]);
    const emptyDelete = await owner.delete(`${ws}/channels/bulk`, jsonBody({ channelIds: [] }));
    expect(emptyDelete.status).toBe(400);
    const badId = await owner.put(`${ws}/channels/bulk`, { agentConfig: agent(projectId), channelIds: ['general'] });
    expect(badId.status).toBe(400);
    const missing = await owner.put(`${ws}/channels/bulk`, {
      agentConfig: agent(projectId, 'missing-x'),
      channelIds: ['CGENERAL'],
    });
    expect(missing.status).toBe(422);
    await fake.fail(teamId, { method: 'conversations.info', httpStatus: 503, times: 5 });
    const down = await owner.put(`${ws}/channels/bulk`, {
      agentConfig: agent(projectId),
      channelIds: ['CGENERAL', 'CSUPPORT'],
    });
    expect(down.status).toBe(502);
    expect(down.body.chatError).toBe('http_503');
    await fake.clearFailures(teamId);
    const listed = await owner.get(`${ws}/channels`);
    expect(listed.body.channels.every((c: { hasAgentConfig: boolean }) => !c.hasAgentConfig)).toBe(true);
  });

  test('when the default agent is set and cleared, then the workspace and its listing show it', async () => {
    const { ws, owner, projectId, teamId } = await anInstalledWorkspace();
    expect((await owner.get(`${ws}/settings`)).body).toEqual({ defaultAgent: null });
    const set = await owner.put(`${ws}/settings`, {
      defaultAgent: { agentId: 'front-desk', projectId, grantAccessToMembers: true },
    });
    expect(set.body).toEqual({ success: true });
    expect((await owner.get(`${ws}/settings`)).body).toEqual({
      defaultAgent: { agentId: 'front-desk', grantAccessToMembers: true, projectId },
    });
    expect((await owner.get(ws)).body.defaultAgent).toEqual({
      agentId: 'front-desk',
      grantAccessToMembers: true,
      projectId,
    });
    expect((await owner.get(`${CHAT}/workspaces`)).body.workspaces).toEqual([
      expect.objectContaining({ teamId, hasDefaultAgent: true, defaultAgentName: 'front-desk' }),
    ]);

    const missing = await owner.put(`${ws}/settings`, { defaultAgent: { agentId: 'missing-one', projectId } });
    expect(missing.status).toBe(422);
    expect((await owner.put(`${ws}/settings`, { somethingElse: true })).status).toBe(400);
    expect((await owner.get(`${ws}/settings`)).body.defaultAgent.agentId).toBe('front-desk');
    expect((await owner.put(`${ws}/settings`, {})).body).toEqual({ success: true });
    expect((await owner.get(`${ws}/settings`)).body.defaultAgent.agentId).toBe('front-desk');

    expect((await owner.put(`${ws}/settings`, { defaultAgent: null })).body).toEqual({ success: true });
    expect((await owner.get(`${ws}/settings`)).body).toEqual({ defaultAgent: null });
  });

  test('when join-from-workspace is switched, then it reads back, and a non-boolean is 400', async () => {
    const { ws, owner } = await anInstalledWorkspace();
    expect((await owner.get(`${ws}/join-from-workspace`)).body).toEqual({ shouldAllowJoinFromWorkspace: false });
    expect((await owner.put(`${ws}/join-from-workspace`, { shouldAllowJoinFromWorkspace: true })).body).toEqual({
      success: true,
    });
    expect((await owner.get(`${ws}/join-from-workspace`)).body).toEqual({ shouldAllowJoinFromWorkspace: true });
    expect((await owner.put(`${ws}/join-from-workspace`, { shouldAllowJoinFromWorkspace: 'yes' })).status).toBe(400);
    expect((await owner.get(`${ws}/join-from-workspace`)).body).toEqual({ shouldAllowJoinFromWorkspace: true });
  });

  test("when health is checked, then it reports the bot and its permissions, or the chat product's error", async () => {
    const { ws, owner, teamId, team } = await anInstalledWorkspace();
    const ok = await owner.get(`${ws}/health`);
    expect(ok.body).toEqual({
      botId: 'BFAKEBOT',
      botName: 'agents-bot',
      error: null,
      healthy: true,
      permissions: { canPostMessages: true, canReadChannels: true, canReadHistory: true },
      teamId,
      teamName: team.teamName,
    });
    await fake.fail(teamId, { method: 'auth.test', error: 'invalid_auth' });
    const bad = await owner.get(`${ws}/health`);
    expect(bad.status).toBe(200);
    expect(bad.body).toMatchObject({
      healthy: false,
      error: 'invalid_auth',
      botId: null,
      permissions: { canPostMessages: false, canReadChannels: false, canReadHistory: false },
    });
  });

  test('when the bot was granted fewer scopes, then health reports only those permissions', async () => {
    const p = aProject();
    const team = await fake.createTeam({ scopes: ['chat:write'] });
    await installChatWorkspace(stack.gatewayUrl, {
      token: stack.adminToken,
      tenantId: p.tenantId,
      teamId: team.teamId,
    });
    const res = await admin.get(`${CHAT}/workspaces/${team.teamId}/health`);
    expect(res.body.permissions).toEqual({ canPostMessages: true, canReadChannels: false, canReadHistory: false });
  });

  test('when a test message is sent, then the chat product receives it, and a refusal or an outage is reported clearly', async () => {
    const { ws, owner, teamId } = await anInstalledWorkspace(channels);
    const sent = await owner.post(`${ws}/test-message`, { channelId: 'CGENERAL', message: 'hello from the test' });
    expect(sent.status).toBe(200);
    expect(sent.body).toEqual({ error: null, messageTs: expect.any(String), success: true });
    expect(await fake.messages(teamId)).toEqual([
      { channel: 'CGENERAL', text: 'hello from the test', ts: sent.body.messageTs },
    ]);

    const refused = await owner.post(`${ws}/test-message`, { channelId: 'CNOWHERE' });
    expect(refused.body).toEqual({ error: 'channel_not_found', messageTs: null, success: false });
    await fake.fail(teamId, { method: 'chat.postMessage', httpStatus: 500 });
    const down = await owner.post(`${ws}/test-message`, { channelId: 'CGENERAL' });
    expect(down.status).toBe(502);
    expect(down.body.chatError).toBe('http_500');
    expect((await owner.post(`${ws}/test-message`, {})).status).toBe(400);
  });

  test('when the chat product cannot revoke the token, then uninstall answers 502 and keeps the workspace; a token it already rejects still uninstalls', async () => {
    const { ws, owner, teamId } = await anInstalledWorkspace();
    await fake.fail(teamId, { method: 'auth.revoke', httpStatus: 500 });
    const failed = await owner.delete(ws);
    expect(failed.status).toBe(502);
    expect(failed.body.chatError).toBe('http_500');
    expect((await owner.get(ws)).status).toBe(200);

    await fake.fail(teamId, { method: 'auth.revoke', error: 'invalid_auth' });
    const done = await owner.delete(ws);
    expect(done.body).toEqual({ success: true });
    expect((await owner.get(ws)).status).toBe(404);
    expect((await owner.delete(ws)).status).toBe(404);
  });
});
