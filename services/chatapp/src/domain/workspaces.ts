import type {
  AgentConfig,
  AgentConfigInput,
  ChatWorkspace,
  ChatWorkspaceSummary,
  Principal,
} from '@platform/contracts';
import { AppError } from '@platform/problems';
import { getLogger } from '@platform/logger';
import { ChatApiError } from '../clients/chat-api';
import { workspaceBinding, type StoredWorkspace } from '../data/workspace.repo';
import type { ChatappDeps } from './deps';
import { canSee } from './access';
import { chatProblem, DEAD_TOKEN_ERRORS } from './chat-errors';

const log = getLogger('chatapp.workspaces');

/** The workspace, if the caller may see it (other tenants' workspaces are 404, not 403). */
export async function loadWorkspace(deps: ChatappDeps, principal: Principal, teamId: string): Promise<StoredWorkspace> {
  const ws = await deps.workspaces.findByTeam(teamId);
  if (!ws || !canSee(principal, ws.tenantId))
    throw new AppError('not_found', `Chat workspace ${teamId} is not installed`);
  return ws;
}

/**
 * The workspace's bot token. One that cannot be unsealed (sealed for another workspace or tenant, under a key not in
 * ENCRYPTION_KEYS, or damaged) is unusable, like a revoked token: the chat product's `invalid_auth`, so health reports
 * it and uninstall still works.
 */
export function botToken(deps: ChatappDeps, ws: StoredWorkspace): string {
  try {
    return deps.box.open(ws.botTokenSealed, workspaceBinding(ws));
  } catch (err) {
    log.warn(
      { teamId: ws._id, err: (err as Error).message },
      'stored bot token cannot be unsealed; treating it as revoked',
    );
    throw new ChatApiError('token.unseal', 'invalid_auth', 'platform');
  }
}

export function toAgentConfig(
  a: { agentId: string; projectId: string; grantAccessToMembers: boolean } | null | undefined,
): AgentConfig | null {
  return a ? { agentId: a.agentId, grantAccessToMembers: a.grantAccessToMembers, projectId: a.projectId } : null;
}

function toSummary(ws: StoredWorkspace): ChatWorkspaceSummary {
  return {
    connectionId: ws.connectionId,
    defaultAgentName: ws.defaultAgent?.agentName ?? null,
    hasDefaultAgent: Boolean(ws.defaultAgent),
    teamDomain: ws.teamDomain ?? null,
    teamId: ws._id,
    teamName: ws.teamName,
    tenantId: ws.tenantId,
  };
}

export async function listWorkspaces(deps: ChatappDeps, principal: Principal, tenantId: string | undefined) {
  let scope: string | undefined;
  if (principal.kind === 'admin') scope = tenantId;
  else if (principal.kind === 'user') {
    if (tenantId !== undefined && tenantId !== principal.tenantId)
      throw new AppError('forbidden', 'This credential has no access to that tenant');
    scope = principal.tenantId;
  } else throw new AppError('forbidden', 'This credential cannot be used here');
  return (await deps.workspaces.listByTenant(scope)).map(toSummary);
}

export async function getWorkspace(deps: ChatappDeps, principal: Principal, teamId: string): Promise<ChatWorkspace> {
  const ws = await loadWorkspace(deps, principal, teamId);
  return {
    connectionId: ws.connectionId,
    defaultAgent: toAgentConfig(ws.defaultAgent),
    teamId: ws._id,
    teamName: ws.teamName,
    tenantId: ws.tenantId,
  };
}

/** An agent config must name an agent that exists in that project of the workspace's tenant (else 422). */
export async function assertAgentExists(
  deps: ChatappDeps,
  tenantId: string,
  cfg: AgentConfigInput,
  pointer: string,
): Promise<{ id: string; name: string }> {
  const agent = await deps.agents.lookup({ tenantId, projectId: cfg.projectId, agentId: cfg.agentId });
  if (!agent) {
    const detail = `Agent "${cfg.agentId}" does not exist in project "${cfg.projectId}"`;
    throw new AppError('unprocessable_entity', detail, { errors: [{ pointer: `${pointer}/agentId`, detail }] });
  }
  return agent;
}

/**
 * Uninstall: revoke the bot token with the chat product (a token it already rejects counts as revoked), then
 * remove the channel settings, the user links and the installation. A chat product that cannot revoke is a 502
 * and nothing is removed, so the call can be repeated.
 */
export async function uninstallWorkspace(deps: ChatappDeps, principal: Principal, teamId: string): Promise<void> {
  const ws = await loadWorkspace(deps, principal, teamId);
  try {
    await deps.chat.revoke(botToken(deps, ws));
  } catch (err) {
    if (!(err instanceof ChatApiError && err.kind === 'platform' && DEAD_TOKEN_ERRORS.has(err.chatError)))
      throw chatProblem(err);
    log.info({ teamId, chatError: err.chatError }, 'bot token was already unusable; uninstalling anyway');
  }
  await deps.channels.removeAllOfTeam(ws.tenantId, ws._id);
  await deps.links.removeAllOfTeam(ws.tenantId, ws._id);
  await deps.workspaces.remove(ws._id, ws.tenantId);
  log.info({ teamId, tenantId: ws.tenantId }, 'chat workspace uninstalled');
}

export async function getWorkspaceSettings(deps: ChatappDeps, principal: Principal, teamId: string) {
  const ws = await loadWorkspace(deps, principal, teamId);
  return { defaultAgent: toAgentConfig(ws.defaultAgent) };
}

export async function updateWorkspaceSettings(
  deps: ChatappDeps,
  principal: Principal,
  teamId: string,
  body: { defaultAgent?: AgentConfigInput | null },
) {
  const ws = await loadWorkspace(deps, principal, teamId);
  if (body.defaultAgent === undefined) return;
  let next = null;
  if (body.defaultAgent) {
    const agent = await assertAgentExists(deps, ws.tenantId, body.defaultAgent, '/defaultAgent');
    next = { ...body.defaultAgent, agentName: agent.name };
  }
  if (!(await deps.workspaces.setDefaultAgent(ws._id, ws.tenantId, next)))
    throw new AppError('not_found', `Chat workspace ${teamId} is not installed`);
}

export async function getJoinFromWorkspace(deps: ChatappDeps, principal: Principal, teamId: string) {
  const ws = await loadWorkspace(deps, principal, teamId);
  return { shouldAllowJoinFromWorkspace: Boolean(ws.shouldAllowJoinFromWorkspace) };
}

export async function setJoinFromWorkspace(deps: ChatappDeps, principal: Principal, teamId: string, allow: boolean) {
  const ws = await loadWorkspace(deps, principal, teamId);
  if (!(await deps.workspaces.setJoinFromWorkspace(ws._id, ws.tenantId, allow)))
    throw new AppError('not_found', `Chat workspace ${teamId} is not installed`);
}

const hasAny = (scopes: string[], wanted: string[]) => wanted.some((s) => scopes.includes(s));

/** Checks the bot token (auth.test) and reads the bot's permissions from its scopes; a failing check is reported, not thrown. */
export async function workspaceHealth(deps: ChatappDeps, principal: Principal, teamId: string) {
  const ws = await loadWorkspace(deps, principal, teamId);
  const permissionsOf = (scopes: string[]) => ({
    canPostMessages: hasAny(scopes, ['chat:write', 'chat:write.public']),
    canReadChannels: hasAny(scopes, ['channels:read', 'groups:read']),
    canReadHistory: hasAny(scopes, ['channels:history', 'groups:history']),
  });
  try {
    const info = await deps.chat.authTest(botToken(deps, ws));
    const scopes = info.scopes ?? ws.scopes;
    return {
      botId: info.botId,
      botName: info.user,
      error: null,
      healthy: true,
      permissions: permissionsOf(scopes),
      teamId: ws._id,
      teamName: info.team ?? ws.teamName,
    };
  } catch (err) {
    if (!(err instanceof ChatApiError)) throw err;
    return {
      botId: null,
      botName: null,
      error: err.chatError,
      healthy: false,
      permissions: permissionsOf([]),
      teamId: ws._id,
      teamName: ws.teamName,
    };
  }
}

/** Posts a test message; the chat product's refusal is reported as `{success:false, error}`, no answer at all is a 502. */
export async function sendTestMessage(
  deps: ChatappDeps,
  principal: Principal,
  teamId: string,
  body: { channelId: string; message?: string },
) {
  const ws = await loadWorkspace(deps, principal, teamId);
  try {
    const posted = await deps.chat.postMessage(botToken(deps, ws), {
      channel: body.channelId,
      text: body.message ?? 'Test message from the agent platform: the app can post in this channel.',
    });
    return { error: null, messageTs: posted.ts, success: true };
  } catch (err) {
    if (err instanceof ChatApiError && err.kind === 'platform')
      return { error: err.chatError, messageTs: null, success: false };
    throw chatProblem(err);
  }
}
