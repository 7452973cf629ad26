import type { AgentConfigInput, ChatChannel, Principal } from '@platform/contracts';
import { AppError } from '@platform/problems';
import { randomId } from '@platform/secrets';
import { ChatApiError, type RawChannel } from '../clients/chat-api';
import type { ChatappDeps } from './deps';
import { chatProblem, orChatProblem } from './chat-errors';
import { assertAgentExists, botToken, loadWorkspace, toAgentConfig } from './workspaces';

const DEFAULT_TYPES = 'public_channel,private_channel';

/** The chat product's channels of a workspace, one page, with our agent settings merged in. */
export async function listChannels(
  deps: ChatappDeps,
  principal: Principal,
  teamId: string,
  q: { limit: number; cursor?: string; types?: string },
) {
  const ws = await loadWorkspace(deps, principal, teamId);
  let page: Awaited<ReturnType<ChatappDeps['chat']['listChannels']>>;
  try {
    page = await deps.chat.listChannels(botToken(deps, ws), {
      limit: q.limit,
      cursor: q.cursor,
      types: q.types ?? DEFAULT_TYPES,
    });
  } catch (err) {
    // A cursor that was not one of our nextCursors is the caller's mistake, not the chat product's.
    if (err instanceof ChatApiError && err.chatError === 'invalid_cursor') {
      throw new AppError('bad_request', 'The cursor is not valid: pass the nextCursor of the previous page', {
        errors: [{ pointer: '/query/cursor', detail: 'not a cursor of this list' }],
      });
    }
    throw chatProblem(err);
  }
  const configs = await deps.channels.findMany(
    ws.tenantId,
    ws._id,
    page.channels.map((c) => c.id),
  );
  const byChannel = new Map(configs.map((c) => [c.channelId, c]));
  const channels: ChatChannel[] = page.channels.map((c) => {
    const cfg = byChannel.get(c.id);
    return { ...c, hasAgentConfig: Boolean(cfg), agentConfig: toAgentConfig(cfg) };
  });
  return { channels, nextCursor: page.nextCursor };
}

export async function getChannelSettings(deps: ChatappDeps, principal: Principal, teamId: string, channelId: string) {
  const ws = await loadWorkspace(deps, principal, teamId);
  const cfg = await deps.channels.find(ws.tenantId, ws._id, channelId);
  return { agentConfig: toAgentConfig(cfg), channelId };
}

const channelType = (c: RawChannel) => (c.isPrivate ? 'private_channel' : 'public_channel');

/** Sets a channel's agent: the agent must exist in the tenant's project and the channel in the workspace. */
export async function setChannelAgent(
  deps: ChatappDeps,
  principal: Principal,
  teamId: string,
  channelId: string,
  body: { agentConfig: AgentConfigInput; channelName?: string; channelType?: string },
) {
  const ws = await loadWorkspace(deps, principal, teamId);
  await assertAgentExists(deps, ws.tenantId, body.agentConfig, '/agentConfig');
  let channel: RawChannel;
  try {
    channel = await deps.chat.channelInfo(botToken(deps, ws), channelId);
  } catch (err) {
    if (err instanceof ChatApiError && err.chatError === 'channel_not_found') {
      throw new AppError(
        'not_found',
        `Channel ${channelId} was not found in chat workspace ${teamId} (the chat product answered "channel_not_found")`,
      );
    }
    throw chatProblem(err);
  }
  const saved = await deps.channels.upsert({
    configId: randomId(20),
    tenantId: ws.tenantId,
    teamId: ws._id,
    channelId,
    channelName: body.channelName ?? channel.name,
    channelType: body.channelType ?? channelType(channel),
    ...body.agentConfig,
  });
  return { configId: saved.configId, success: true };
}

export async function removeChannelAgent(deps: ChatappDeps, principal: Principal, teamId: string, channelId: string) {
  const ws = await loadWorkspace(deps, principal, teamId);
  if (!(await deps.channels.remove(ws.tenantId, ws._id, channelId)))
    throw new AppError('not_found', `Channel ${channelId} has no agent setting`);
  return { success: true };
}

async function mapLimit<T, R>(items: T[], limit: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/**
 * Bulk set: the agent is checked once (422 stops everything). Each channel is checked with the chat product;
 * one it refuses (for example `channel_not_found`) is reported in `errors` and skipped, the others are set.
 * When the chat product cannot be reached at all, it is a 502 and nothing is written.
 */
export async function bulkSetChannelAgents(
  deps: ChatappDeps,
  principal: Principal,
  teamId: string,
  body: { agentConfig: AgentConfigInput; channelIds: string[] },
) {
  const ws = await loadWorkspace(deps, principal, teamId);
  await assertAgentExists(deps, ws.tenantId, body.agentConfig, '/agentConfig');
  const token = await orChatProblem(async () => botToken(deps, ws));
  const ids = [...new Set(body.channelIds)];
  const checks = await mapLimit(ids, 5, async (channelId) => {
    try {
      return { channelId, channel: await deps.chat.channelInfo(token, channelId) };
    } catch (err) {
      if (err instanceof ChatApiError && err.kind === 'platform') return { channelId, error: err.chatError };
      return { channelId, fatal: err };
    }
  });
  const fatal = checks.find((c) => 'fatal' in c);
  if (fatal && 'fatal' in fatal) throw chatProblem(fatal.fatal);
  const errors: Array<{ channelId: string; error: string }> = [];
  let updated = 0;
  for (const c of checks) {
    if ('error' in c && c.error) {
      errors.push({ channelId: c.channelId, error: c.error });
      continue;
    }
    if (!('channel' in c) || !c.channel) continue;
    try {
      await deps.channels.upsert({
        configId: randomId(20),
        tenantId: ws.tenantId,
        teamId: ws._id,
        channelId: c.channelId,
        channelName: c.channel.name,
        channelType: channelType(c.channel),
        ...body.agentConfig,
      });
      updated++;
    } catch {
      errors.push({ channelId: c.channelId, error: 'write_failed' });
    }
  }
  return { errors, failed: errors.length, success: errors.length === 0, updated };
}

export async function bulkRemoveChannelAgents(
  deps: ChatappDeps,
  principal: Principal,
  teamId: string,
  channelIds: string[],
) {
  const ws = await loadWorkspace(deps, principal, teamId);
  const removed = await deps.channels.removeMany(ws.tenantId, ws._id, [...new Set(channelIds)]);
  return { removed, success: true };
}
