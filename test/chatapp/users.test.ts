import { completeLinkSession, postChannelMessage } from '@platform/contracts';
import { aProject, installChatWorkspace, requestSubject, signChatLinkToken } from '@platform/testkit';
import { admin, anInstalledWorkspace, CHAT, fake, stack, tenantClient } from '../support/chatapp';

const secret = stack.env.CHATAPP_STATE_SECRET!;
const nats = stack.env.NATS_URL!;

describe('linking chat users to platform users', () => {
  test('when a link token has expired, then verify-token answers 410 and nothing is linked', async () => {
    const { tenantId, teamId } = await anInstalledWorkspace();
    const carol = await tenantClient(tenantId, 'member', 'user-carol');
    const token = signChatLinkToken(secret, { tenantId, teamId, chatappUserId: 'UCAROL', name: 'carol' }, -60);
    const res = await carol.post(`${CHAT}/users/link/verify-token`, { token, userId: 'user-carol' });
    expect(res.status).toBe(410);
    expect(res.body).toMatchObject({ code: 'gone', detail: 'The link token has expired; ask for a new one' });
    expect(
      (await carol.get(`${CHAT}/users/link-status?chatappUserId=UCAROL&chatappTeamId=${teamId}`)).body.linked,
    ).toBe(false);
  });

  test('when a link token is used twice, then the second use answers 410 and the first link stays', async () => {
    const { tenantId, teamId } = await anInstalledWorkspace();
    const carol = await tenantClient(tenantId, 'member', 'user-carol');
    const mallory = await tenantClient(tenantId, 'member', 'user-mallory');
    const token = signChatLinkToken(secret, { tenantId, teamId, chatappUserId: 'UCAROL', name: 'carol' });
    expect((await carol.post(`${CHAT}/users/link/verify-token`, { token, userId: 'user-carol' })).status).toBe(200);
    const again = await mallory.post(`${CHAT}/users/link/verify-token`, { token, userId: 'user-mallory' });
    expect(again.status).toBe(410);
    expect(again.body.detail).toBe('The link token was already used; ask for a new one');
    expect((await admin.get(`${CHAT}/workspaces/${teamId}/users`)).body.linkedUsers).toEqual([
      expect.objectContaining({ chatappUserId: 'UCAROL', userId: 'user-carol' }),
    ]);
  });

  test('when verify-token gets a forged token or bad input, then it answers 400 and links nothing', async () => {
    const { tenantId, teamId } = await anInstalledWorkspace();
    const carol = await tenantClient(tenantId, 'member', 'user-carol');
    const forged = signChatLinkToken('a-secret-nobody-configured-here', { tenantId, teamId, chatappUserId: 'UCAROL' });
    expect((await carol.post(`${CHAT}/users/link/verify-token`, { token: forged, userId: 'user-carol' })).status).toBe(
      400,
    );
    expect(
      (await carol.post(`${CHAT}/users/link/verify-token`, { token: 'nonsense', userId: 'user-carol' })).status,
    ).toBe(400);
    const good = signChatLinkToken(secret, { tenantId, teamId, chatappUserId: 'UCAROL' });
    for (const body of [
      { token: '', userId: 'user-carol' },
      { token: good, userId: '' },
      { token: good },
      { token: good, userId: 'user-carol', userEmail: 'not-an-email' },
    ]) {
      const res = await carol.post(`${CHAT}/users/link/verify-token`, body);
      expect(res.status).toBe(400);
    }
    // none of the refused attempts spent the good token
    expect(
      (
        await carol.post(`${CHAT}/users/link/verify-token`, {
          token: good,
          userId: 'user-carol',
          userEmail: 'carol@example.com',
        })
      ).status,
    ).toBe(200);
  });

  test('when someone presents a token for another user, another tenant or an uninstalled workspace, then it is refused and the token stays usable', async () => {
    const { tenantId, teamId, ws, owner } = await anInstalledWorkspace();
    const carol = await tenantClient(tenantId, 'member', 'user-carol');
    const stranger = await tenantClient(aProject().tenantId, 'admin', 'stranger');
    const token = signChatLinkToken(secret, { tenantId, teamId, chatappUserId: 'UCAROL' });
    expect((await carol.post(`${CHAT}/users/link/verify-token`, { token, userId: 'user-dave' })).status).toBe(403);
    expect((await stranger.post(`${CHAT}/users/link/verify-token`, { token, userId: 'stranger' })).status).toBe(403);
    expect((await owner.post(`${CHAT}/users/link/verify-token`, { token, userId: 'user-carol' })).status).toBe(200);

    const late = signChatLinkToken(secret, { tenantId, teamId, chatappUserId: 'ULATE' });
    expect((await owner.delete(ws)).status).toBe(200);
    const gone = await carol.post(`${CHAT}/users/link/verify-token`, { token: late, userId: 'user-carol' });
    expect(gone.status).toBe(404);
  });

  test('when link tokens are issued through the API, then only tenant admins may, and a bot that cannot DM is a 502', async () => {
    const { tenantId, teamId, ws, owner } = await anInstalledWorkspace();
    const member = await tenantClient(tenantId, 'member', 'm1');
    expect((await member.post(`${ws}/link-tokens`, { chatappUserId: 'UX' })).status).toBe(403);
    expect((await owner.post(`${ws}/link-tokens`, { chatappUserId: 'not a user' })).status).toBe(400);
    const issued = await owner.post(`${ws}/link-tokens`, { chatappUserId: 'UX', chatappEmail: 'x@chat.test' });
    expect(issued.status).toBe(201);
    expect(issued.body).toEqual({
      token: expect.any(String),
      linkUrl: expect.stringContaining('token='),
      expiresAt: expect.any(String),
      messageTs: null,
    });
    expect(new Date(issued.body.expiresAt).getTime()).toBeGreaterThan(Date.now());
    await fake.fail(teamId, { method: 'chat.postMessage', error: 'cannot_dm_bot' });
    const dm = await owner.post(`${ws}/link-tokens`, { chatappUserId: 'UX', sendDm: true });
    expect(dm.status).toBe(502);
    expect(dm.body.chatError).toBe('cannot_dm_bot');
  });

  test('when link-status is asked with bad or foreign parameters, then it answers 400 or 403; the admin defaults to tenant default', async () => {
    const { tenantId, teamId } = await anInstalledWorkspace();
    const carol = await tenantClient(tenantId, 'member', 'user-carol');
    await carol.post(`${CHAT}/users/link/verify-token`, {
      token: signChatLinkToken(secret, { tenantId, teamId, chatappUserId: 'UCAROL' }),
      userId: 'user-carol',
    });
    expect((await carol.get(`${CHAT}/users/link-status?chatappUserId=UCAROL`)).status).toBe(400);
    expect((await carol.get(`${CHAT}/users/link-status?chatappUserId=UCAROL&chatappTeamId=team1`)).status).toBe(400);
    expect(
      (await carol.get(`${CHAT}/users/link-status?chatappUserId=UCAROL&chatappTeamId=${teamId}&tenantId=other-tenant`))
        .status,
    ).toBe(403);
    expect((await admin.get(`${CHAT}/users/link-status?chatappUserId=UCAROL&chatappTeamId=${teamId}`)).body).toEqual({
      linkId: null,
      linked: false,
      linkedAt: null,
      chatappUsername: null,
    });
    expect(
      (await admin.get(`${CHAT}/users/link-status?chatappUserId=UCAROL&chatappTeamId=${teamId}&tenantId=${tenantId}`))
        .body.linked,
    ).toBe(true);
    expect((await carol.get(`${CHAT}/users/status`)).status).toBe(400);
    expect((await carol.get(`${CHAT}/users/status?userId=nobody`)).body).toEqual({
      connected: false,
      connection: null,
    });
  });

  test('when a user is disconnected by chat identity, then the link is gone; bad or unmatched requests answer 400 or 404', async () => {
    const { tenantId, teamId } = await anInstalledWorkspace();
    const carol = await tenantClient(tenantId, 'member', 'user-carol');
    const dave = await tenantClient(tenantId, 'member', 'user-dave');
    await carol.post(`${CHAT}/users/link/verify-token`, {
      token: signChatLinkToken(secret, { tenantId, teamId, chatappUserId: 'UCAROL' }),
      userId: 'user-carol',
    });
    expect((await carol.post(`${CHAT}/users/disconnect`, {})).status).toBe(400);
    expect((await carol.post(`${CHAT}/users/disconnect`, { chatappTeamId: teamId })).status).toBe(400);
    expect(
      (await carol.post(`${CHAT}/users/disconnect`, { chatappTeamId: teamId, chatappUserId: 'UNOBODY' })).status,
    ).toBe(404);
    expect(
      (await dave.post(`${CHAT}/users/disconnect`, { chatappTeamId: teamId, chatappUserId: 'UCAROL' })).status,
    ).toBe(403);
    expect(
      (await carol.get(`${CHAT}/users/link-status?chatappUserId=UCAROL&chatappTeamId=${teamId}`)).body.linked,
    ).toBe(true);
    const off = await carol.post(`${CHAT}/users/disconnect`, { chatappTeamId: teamId, chatappUserId: 'UCAROL' });
    expect(off.body).toEqual({ success: true });
    expect(
      (await carol.get(`${CHAT}/users/link-status?chatappUserId=UCAROL&chatappTeamId=${teamId}`)).body.linked,
    ).toBe(false);
    expect((await carol.post(`${CHAT}/users/disconnect`, { userId: 'user-carol' })).status).toBe(404);
  });

  test('when connect is called for someone else or with bad input, then it answers 403 or 400; a link session expires like a link token', async () => {
    const { tenantId, teamId } = await anInstalledWorkspace();
    const carol = await tenantClient(tenantId, 'member', 'user-carol');
    expect((await carol.post(`${CHAT}/users/connect`, { userId: 'user-dave' })).status).toBe(403);
    expect((await carol.post(`${CHAT}/users/connect`, {})).status).toBe(400);
    expect((await carol.post(`${CHAT}/users/connect`, { userId: 'user-carol', userEmail: 'nope' })).status).toBe(400);
    expect((await carol.post(`${CHAT}/users/connect`, { userId: 'user-carol', tenantId: 'someone-else' })).status).toBe(
      403,
    );
    const wrongTeam = await requestSubject(nats, completeLinkSession.subject, {
      sessionToken: (await carol.post(`${CHAT}/users/connect`, { userId: 'user-carol' })).body.sessionToken,
      chatappTeamId: 'TNOTOURS',
      chatappUserId: 'UCAROL',
    });
    expect(wrongTeam).toMatchObject({ ok: false, problem: { status: 404 } });
    const bad = await requestSubject(nats, completeLinkSession.subject, {
      sessionToken: 'x',
      chatappTeamId: teamId,
      chatappUserId: 'UCAROL',
    });
    expect(bad).toMatchObject({ ok: false, problem: { status: 400 } });
  });
});

describe('posting webhook events to chat channels (internal subject)', () => {
  test('when the workspace refuses the channel or none is installed, then the reply says why', async () => {
    const { tenantId, projectId } = await anInstalledWorkspace([{ id: 'CALERTS', name: 'alerts' }]);
    const refused = await requestSubject(nats, postChannelMessage.subject, {
      tenantId,
      projectId,
      channelId: 'CUNKNOWN',
      text: 'hi',
    });
    expect(refused.body).toEqual({ ok: false, error: 'channel_not_found' });
    const none = await requestSubject(nats, postChannelMessage.subject, {
      ...aProject(),
      channelId: 'CALERTS',
      text: 'hi',
    });
    expect(none.body).toEqual({ ok: false, error: 'no_workspace' });
    const invalid = await requestSubject(nats, postChannelMessage.subject, { tenantId, channelId: 'CALERTS' });
    expect(invalid).toMatchObject({ ok: false, problem: { status: 400 } });
  });

  test('when a tenant has two workspaces, then the post goes to the one with that channel configured', async () => {
    const first = await anInstalledWorkspace([{ id: 'CONE', name: 'one' }]);
    const other = await fake.createTeam({ channels: [{ id: 'CTWO', name: 'two' }] });
    await installChatWorkspace(stack.gatewayUrl, {
      token: stack.adminToken,
      tenantId: first.tenantId,
      teamId: other.teamId,
    });
    await first.owner.put(`${CHAT}/workspaces/${other.teamId}/channels/CTWO/settings`, {
      agentConfig: { agentId: 'bot', projectId: first.projectId },
    });
    const res = await requestSubject(nats, postChannelMessage.subject, {
      tenantId: first.tenantId,
      projectId: first.projectId,
      channelId: 'CTWO',
      text: 'routed',
    });
    expect(res.body).toEqual({ ok: true, messageTs: expect.any(String) });
    expect(await fake.messages(other.teamId)).toEqual([expect.objectContaining({ channel: 'CTWO', text: 'routed' })]);
    expect(await fake.messages(first.teamId)).toEqual([]);
  });
});
