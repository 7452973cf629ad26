import type { ChatConnection, ChatLinkedUser, Principal } from '@platform/contracts';
import { iso } from '@platform/contracts';
import { AppError } from '@platform/problems';
import { randomId } from '@platform/secrets';
import type { StoredUserLink } from '../data/user-link.repo';
import type { ChatappDeps } from './deps';
import { assertActsFor, tenantFor } from './access';
import { chatProblem, notConfigured } from './chat-errors';
import { secondsLeft, signToken, verifyToken, type TokenKind, type TokenProblem } from './tokens';
import { botToken, loadWorkspace } from './workspaces';

interface LinkClaims {
  tid: string;
  team: string;
  sub: string;
  name?: string;
  email?: string;
}
interface SessionClaims {
  tid: string;
  sub: string;
  email?: string;
  name?: string;
}

function tokenError(kind: 'link token' | 'link session', problem: TokenProblem | 'replayed'): AppError {
  switch (problem) {
    case 'expired':
      return new AppError('gone', `The ${kind} has expired; ask for a new one`);
    case 'replayed':
      return new AppError('gone', `The ${kind} was already used; ask for a new one`);
    default:
      return new AppError('bad_request', `The ${kind} is not valid`, {
        errors: [{ pointer: kind === 'link token' ? '/token' : '/sessionToken', detail: 'not a valid token' }],
      });
  }
}

async function verifyOnce<C>(
  deps: ChatappDeps,
  kind: TokenKind,
  label: 'link token' | 'link session',
  token: string,
  check: (claims: C) => Promise<void>,
) {
  const v = verifyToken<C>(deps.settings.acceptedStateSecrets, kind, token);
  if ('problem' in v) throw tokenError(label, v.problem);
  // Every check comes before the token is spent, so a refused attempt does not burn it.
  await check(v.claims);
  if (!(await deps.nonces.claim(kind, v.claims.jti, secondsLeft(v.claims.exp)))) throw tokenError(label, 'replayed');
  return v.claims;
}

export function toLinkedUser(l: StoredUserLink): ChatLinkedUser {
  return {
    id: l.linkId,
    lastUsedAt: iso(l.lastUsedAt) ?? null,
    linkedAt: iso(l.linkedAt)!,
    chatappEmail: l.chatappEmail ?? null,
    chatappTeamId: l.teamId,
    chatappUserId: l.chatappUserId,
    chatappUsername: l.chatappUsername ?? null,
    userId: l.userId,
  };
}

function toConnection(l: StoredUserLink): ChatConnection {
  return {
    appUserEmail: l.appUserEmail ?? null,
    appUserId: l.userId,
    connectionId: l.connectionId,
    linkedAt: iso(l.linkedAt)!,
    chatappDisplayName: l.chatappDisplayName ?? l.chatappUsername ?? null,
    chatappTeamId: l.teamId,
    chatappUserId: l.chatappUserId,
    tenantId: l.tenantId,
  };
}

/**
 * A link token for a chat user of a workspace (what the bot sends a user who asks to link), and the link page
 * URL carrying it; with `sendDm` the bot sends that link to the user.
 */
export async function createLinkToken(
  deps: ChatappDeps,
  principal: Principal,
  teamId: string,
  body: { chatappUserId: string; chatappUsername?: string; chatappEmail?: string; sendDm: boolean },
) {
  const ws = await loadWorkspace(deps, principal, teamId);
  const claims: LinkClaims = {
    tid: ws.tenantId,
    team: ws._id,
    sub: body.chatappUserId,
    name: body.chatappUsername,
    email: body.chatappEmail,
  };
  const { token, expiresAt } = signToken(
    deps.settings.stateSecret,
    'link',
    { ...claims },
    deps.settings.linkTtlSeconds,
  );
  const url = new URL(deps.settings.linkUrl);
  url.searchParams.set('token', token);
  let messageTs: string | null = null;
  if (body.sendDm) {
    try {
      const posted = await deps.chat.postMessage(botToken(deps, ws), {
        channel: body.chatappUserId,
        text: `Link your chat account to the agent platform (the link works once, for ${Math.round(deps.settings.linkTtlSeconds / 60)} minutes): ${url.toString()}`,
      });
      messageTs = posted.ts;
    } catch (err) {
      throw chatProblem(err);
    }
  }
  return { token, linkUrl: url.toString(), expiresAt: expiresAt.toISOString(), messageTs };
}

/** A platform user presents a link token: the chat user in it becomes linked to them. */
export async function verifyLinkToken(
  deps: ChatappDeps,
  principal: Principal,
  body: { token: string; userId: string; userEmail?: string },
) {
  let workspace: Awaited<ReturnType<typeof loadWorkspace>> | undefined;
  const claims = await verifyOnce<LinkClaims>(deps, 'link', 'link token', body.token, async (c) => {
    tenantFor(principal, c.tid);
    assertActsFor(principal, body.userId);
    workspace = await loadWorkspace(deps, principal, c.team);
    if (workspace.tenantId !== c.tid) throw new AppError('not_found', `Chat workspace ${c.team} is not installed`);
  });
  const link = await deps.links.link({
    linkId: randomId(20),
    tenantId: claims.tid,
    teamId: claims.team,
    chatappUserId: claims.sub,
    chatappUsername: claims.name ?? null,
    chatappEmail: claims.email ?? null,
    chatappDisplayName: claims.name ?? null,
    userId: body.userId,
    appUserEmail: body.userEmail ?? null,
    connectionId: workspace!.connectionId,
    linkedAt: new Date(),
  });
  return {
    linkId: link.linkId,
    chatappTeamId: link.teamId,
    chatappUsername: link.chatappUsername ?? null,
    success: true,
    tenantId: link.tenantId,
  };
}

/** A platform user starts a link from our side: a link session the chat user hands to the bot. */
export function connectUser(
  deps: ChatappDeps,
  principal: Principal,
  body: { userId: string; tenantId?: string; userEmail?: string; userName?: string },
) {
  const tenantId = tenantFor(principal, body.tenantId);
  assertActsFor(principal, body.userId);
  const base =
    deps.settings.connectUrl ??
    (deps.settings.authorizeUrl && deps.settings.clientId
      ? `${new URL(deps.settings.authorizeUrl).origin}/app_redirect?app=${encodeURIComponent(deps.settings.clientId)}`
      : undefined);
  if (!base) throw notConfigured();
  const claims: SessionClaims = { tid: tenantId, sub: body.userId, email: body.userEmail, name: body.userName };
  const { token } = signToken(deps.settings.stateSecret, 'session', { ...claims }, deps.settings.linkTtlSeconds);
  const url = new URL(base);
  url.searchParams.set('session', token);
  return { connectUrl: url.toString(), sessionToken: token };
}

/** The bot side completes a link session with the chat user who brought it. */
export async function completeLinkSession(
  deps: ChatappDeps,
  body: {
    sessionToken: string;
    chatappTeamId: string;
    chatappUserId: string;
    chatappUsername?: string;
    chatappEmail?: string;
    chatappDisplayName?: string;
  },
) {
  let connectionId = '';
  const claims = await verifyOnce<SessionClaims>(deps, 'session', 'link session', body.sessionToken, async (c) => {
    const ws = await deps.workspaces.findByTeam(body.chatappTeamId);
    if (!ws || ws.tenantId !== c.tid)
      throw new AppError('not_found', `Chat workspace ${body.chatappTeamId} is not installed for this tenant`);
    connectionId = ws.connectionId;
  });
  const link = await deps.links.link({
    linkId: randomId(20),
    tenantId: claims.tid,
    teamId: body.chatappTeamId,
    chatappUserId: body.chatappUserId,
    chatappUsername: body.chatappUsername ?? null,
    chatappEmail: body.chatappEmail ?? null,
    chatappDisplayName: body.chatappDisplayName ?? body.chatappUsername ?? null,
    userId: claims.sub,
    appUserEmail: claims.email ?? null,
    connectionId,
    linkedAt: new Date(),
  });
  return { linkId: link.linkId, userId: link.userId, tenantId: link.tenantId };
}

export async function linkStatus(
  deps: ChatappDeps,
  principal: Principal,
  q: { chatappUserId: string; chatappTeamId: string; tenantId?: string },
) {
  const tenantId = tenantFor(principal, q.tenantId);
  const l = await deps.links.findByChatUser(tenantId, q.chatappTeamId, q.chatappUserId);
  return l
    ? { linkId: l.linkId, linked: true, linkedAt: iso(l.linkedAt)!, chatappUsername: l.chatappUsername ?? null }
    : { linkId: null, linked: false, linkedAt: null, chatappUsername: null };
}

export async function userStatus(deps: ChatappDeps, principal: Principal, q: { userId: string; tenantId?: string }) {
  const tenantId = tenantFor(principal, q.tenantId);
  const l = await deps.links.latestOfUser(tenantId, q.userId);
  return { connected: Boolean(l), connection: l ? toConnection(l) : null };
}

export async function listLinkedUsers(deps: ChatappDeps, principal: Principal, teamId: string) {
  const ws = await loadWorkspace(deps, principal, teamId);
  return { linkedUsers: (await deps.links.listOfTeam(ws.tenantId, ws._id)).map(toLinkedUser) };
}

/** Unlinks one chat user (team + chat user id) or every link of a platform user; nothing to unlink is a 404. */
export async function disconnectUser(
  deps: ChatappDeps,
  principal: Principal,
  body: { chatappTeamId?: string; chatappUserId?: string; tenantId?: string; userId?: string },
) {
  const tenantId = tenantFor(principal, body.tenantId);
  let removed = 0;
  if (body.chatappTeamId && body.chatappUserId) {
    const link = await deps.links.findByChatUser(tenantId, body.chatappTeamId, body.chatappUserId);
    if (link && (body.userId === undefined || body.userId === link.userId)) {
      assertActsFor(principal, link.userId);
      removed = await deps.links.removeChatUser(tenantId, body.chatappTeamId, body.chatappUserId, link.userId);
    }
  } else if (body.userId) {
    assertActsFor(principal, body.userId);
    removed = await deps.links.removeUser(tenantId, body.userId);
  }
  if (!removed) throw new AppError('not_found', 'No linked chat user matches');
  return { success: true };
}
