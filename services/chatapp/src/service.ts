import { defineService } from '@platform/runtime';
import { startAuditLog } from '@platform/audit';
import { startErasureWorker } from '@platform/bus';
import { eraseProjectDocuments } from '@platform/mongo';
import { chatappConfig } from './config';
import { chatApi } from './clients/chat-api';
import { agentDirectory } from './clients/agents';
import { workspaceRepo } from './data/workspace.repo';
import { channelConfigRepo } from './data/channel-config.repo';
import { userLinkRepo } from './data/user-link.repo';
import { nonceStore } from './data/nonce.store';
import type { ChatappDeps } from './domain/deps';
import { registerInstallHandlers } from './handlers/install';
import { registerUserHandlers } from './handlers/users';
import { registerWorkspaceHandlers } from './handlers/workspaces';
import { registerChannelMessageHandlers } from './handlers/channel-messages';

/** The chat-app integration: installation, user links, workspaces and channel settings, channel posts. */
export const chatapp = defineService({
  name: 'chatapp',
  config: chatappConfig,
  async start({ config, bus, db, outbox, redis, nc, box }) {
    const workspaces = workspaceRepo(db);
    const channels = channelConfigRepo(db);
    const links = userLinkRepo(db);
    await Promise.all([workspaces.model.init(), channels.model.init(), links.model.init()]);
    // Without a configured state key, one derived from each sealing key: the newest signs, every one verifies, so a
    // rotation of ENCRYPTION_KEYS does not end the install and link tokens in flight.
    const configuredStateSecret = config.CHATAPP_STATE_SECRET ?? config.CHATAPP_SIGNING_SECRET;
    const stateSecrets = configuredStateSecret ? [configuredStateSecret] : box.derivedSecrets('chatapp-state-secret');
    const deps: ChatappDeps = {
      workspaces,
      channels,
      links,
      nonces: nonceStore(redis),
      chat: chatApi({
        apiUrl: config.CHATAPP_API_URL,
        clientId: config.CHATAPP_CLIENT_ID,
        clientSecret: config.CHATAPP_CLIENT_SECRET,
        timeoutMs: config.CHATAPP_API_TIMEOUT_MS,
      }),
      agents: agentDirectory(bus),
      box,
      settings: {
        stateSecret: stateSecrets[0]!,
        acceptedStateSecrets: stateSecrets,
        clientId: config.CHATAPP_CLIENT_ID,
        authorizeUrl: config.CHATAPP_AUTHORIZE_URL,
        redirectUrl: config.CHATAPP_REDIRECT_URL,
        resultUrl: config.CHATAPP_RESULT_URL,
        linkUrl: config.CHATAPP_LINK_URL,
        connectUrl: config.CHATAPP_CONNECT_URL,
        scopes: config.CHATAPP_SCOPES.split(',')
          .map((s) => s.trim())
          .filter(Boolean),
        linkTtlSeconds: config.CHATAPP_LINK_TOKEN_TTL_SECONDS,
      },
    };
    // Changes made with a management credential are audited here and copied into the tenant's log by management (the
    // install route and OAuth callback, and the bot side's internal calls, are not: docs/security.md, "Audit log").
    const audit = await startAuditLog({ bus, db, outbox, settleSeconds: config.AUDIT_PENDING_SETTLE_SECONDS });
    registerInstallHandlers(bus, deps);
    registerUserHandlers(bus, deps);
    registerWorkspaceHandlers(bus, deps);
    registerChannelMessageHandlers(bus, deps);
    // Project erasure: the channel configs of the project and the workspaces installed into it.
    const erasure = await startErasureWorker(nc, bus, 'chatapp', {
      eraseProject: (scope) => eraseProjectDocuments(db, scope),
    });
    return {
      async stop() {
        await erasure.stop();
        await audit.stop();
      },
    };
  },
});
