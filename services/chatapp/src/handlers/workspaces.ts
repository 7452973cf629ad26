import {
  chatappBulkRemoveChannelAgents,
  chatappBulkSetChannelAgents,
  chatappGetChannelSettings,
  chatappGetJoinFromWorkspace,
  chatappGetWorkspace,
  chatappGetWorkspaceSettings,
  chatappListChannels,
  chatappListLinkedUsers,
  chatappListWorkspaces,
  chatappRemoveChannelAgent,
  chatappSendTestMessage,
  chatappSetChannelAgent,
  chatappSetJoinFromWorkspace,
  chatappUninstallWorkspace,
  chatappUpdateWorkspaceSettings,
  chatappWorkspaceHealth,
} from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';
import type { ChatappDeps } from '../domain/deps';
import {
  getJoinFromWorkspace,
  getWorkspace,
  getWorkspaceSettings,
  listWorkspaces,
  sendTestMessage,
  setJoinFromWorkspace,
  uninstallWorkspace,
  updateWorkspaceSettings,
  workspaceHealth,
} from '../domain/workspaces';
import {
  bulkRemoveChannelAgents,
  bulkSetChannelAgents,
  getChannelSettings,
  listChannels,
  removeChannelAgent,
  setChannelAgent,
} from '../domain/channels';
import { listLinkedUsers } from '../domain/users';

export function registerWorkspaceHandlers(bus: ServiceBus, deps: ChatappDeps) {
  bus.handle(chatappListWorkspaces, async ({ query }, ctx) => ({
    workspaces: await listWorkspaces(deps, ctx.principal, query.tenantId),
  }));
  bus.handle(chatappGetWorkspace, ({ params }, ctx) => getWorkspace(deps, ctx.principal, params.teamId));
  bus.handle(chatappUninstallWorkspace, async ({ params }, ctx) => {
    await uninstallWorkspace(deps, ctx.principal, params.teamId);
    return { success: true };
  });
  bus.handle(chatappListLinkedUsers, ({ params }, ctx) => listLinkedUsers(deps, ctx.principal, params.teamId));
  bus.handle(chatappListChannels, ({ params, query }, ctx) => listChannels(deps, ctx.principal, params.teamId, query));
  bus.handle(chatappGetChannelSettings, ({ params }, ctx) =>
    getChannelSettings(deps, ctx.principal, params.teamId, params.channelId),
  );
  bus.handle(chatappSetChannelAgent, ({ params, body }, ctx) =>
    setChannelAgent(deps, ctx.principal, params.teamId, params.channelId, body),
  );
  bus.handle(chatappRemoveChannelAgent, ({ params }, ctx) =>
    removeChannelAgent(deps, ctx.principal, params.teamId, params.channelId),
  );
  bus.handle(chatappBulkSetChannelAgents, ({ params, body }, ctx) =>
    bulkSetChannelAgents(deps, ctx.principal, params.teamId, body),
  );
  bus.handle(chatappBulkRemoveChannelAgents, ({ params, body }, ctx) =>
    bulkRemoveChannelAgents(deps, ctx.principal, params.teamId, body.channelIds),
  );
  bus.handle(chatappGetWorkspaceSettings, ({ params }, ctx) =>
    getWorkspaceSettings(deps, ctx.principal, params.teamId),
  );
  bus.handle(chatappUpdateWorkspaceSettings, async ({ params, body }, ctx) => {
    await updateWorkspaceSettings(deps, ctx.principal, params.teamId, body);
    return { success: true };
  });
  bus.handle(chatappGetJoinFromWorkspace, ({ params }, ctx) =>
    getJoinFromWorkspace(deps, ctx.principal, params.teamId),
  );
  bus.handle(chatappSetJoinFromWorkspace, async ({ params, body }, ctx) => {
    await setJoinFromWorkspace(deps, ctx.principal, params.teamId, body.shouldAllowJoinFromWorkspace);
    return { success: true };
  });
  bus.handle(chatappWorkspaceHealth, ({ params }, ctx) => workspaceHealth(deps, ctx.principal, params.teamId));
  bus.handle(chatappSendTestMessage, ({ params, body }, ctx) =>
    sendTestMessage(deps, ctx.principal, params.teamId, body),
  );
}
