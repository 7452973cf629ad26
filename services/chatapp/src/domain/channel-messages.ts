import { getLogger } from '@platform/logger';
import { ChatApiError } from '../clients/chat-api';
import type { StoredWorkspace } from '../data/workspace.repo';
import type { ChatappDeps } from './deps';
import { botToken } from './workspaces';

const log = getLogger('chatapp.channel-messages');

/**
 * Which installed workspace posts to a channel for a tenant's project: one with a setting for that channel,
 * else one installed from that project, else the tenant's only workspace.
 */
async function workspaceForChannel(
  deps: ChatappDeps,
  q: { tenantId: string; projectId: string; channelId: string },
): Promise<StoredWorkspace | null> {
  const all = await deps.workspaces.listByTenant(q.tenantId);
  if (!all.length) return null;
  const withChannel = new Set(await deps.channels.teamsWithChannel(q.tenantId, q.channelId));
  return (
    all.find((w) => withChannel.has(w._id)) ??
    all.find((w) => w.projectId === q.projectId) ??
    (all.length === 1 ? all[0]! : null)
  );
}

/** Posts a message (for webhook destinations with `chatappChannelId`); answers the chat product's error as data. */
export async function postChannelMessage(
  deps: ChatappDeps,
  q: { tenantId: string; projectId: string; channelId: string; text: string },
) {
  const ws = await workspaceForChannel(deps, q);
  if (!ws) return { ok: false, error: 'no_workspace' };
  try {
    const posted = await deps.chat.postMessage(botToken(deps, ws), { channel: q.channelId, text: q.text });
    return { ok: true, messageTs: posted.ts };
  } catch (err) {
    if (!(err instanceof ChatApiError)) throw err;
    log.warn({ teamId: ws._id, channelId: q.channelId, chatError: err.chatError }, 'channel message was not posted');
    return { ok: false, error: err.chatError };
  }
}
