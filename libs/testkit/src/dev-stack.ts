import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { completeLinkSession } from '@platform/contracts';
import { startChatappFake, type ChatappFakeServer } from './fakes/chatapp';
import { readEnvFile } from './infra';
import { callInternalOnce } from './internal-calls';
import { startPrivateStack, type PrivateStack } from './private-stack';
import { localSecrets } from './stack';

export interface DevStackOptions {
  /** Folder of the stack's secrets, admin token, logs and the chat fake's state (`.local/` for npm start). */
  localDir: string;
  gatewayPort: number;
  analyticsPort: number;
  /** First of the consecutive HEALTH_PORTs (one per process: the services, then the gateway). */
  healthPortBase: number;
  chatappFakePort: number;
  /**
   * npm start: the shared NATS of scripts/infra.sh, the `platform` databases and Redis prefix, kept from one start to
   * the next. Otherwise (tests) a private NATS, and databases and prefixes of the stack's own, dropped at stop.
   */
  persistent?: boolean;
  logLevel?: string;
}

export interface DevStack {
  stack: PrivateStack;
  chatapp: ChatappFakeServer;
  adminToken: string;
  urls: { gateway: string; analytics: string; chatapp: string; health: Array<{ name: string; url: string }> };
  stop(): Promise<void>;
}

/**
 * The local development stack (npm start): every service and the gateway as real processes, each with its health
 * port, and the test kit's fake of the chat product with its pages for people, the chatapp service configured for it.
 * Development only, like loopback webhooks. Secrets are generated once into `localDir`.
 */
export async function startDevStack(opts: DevStackOptions): Promise<DevStack> {
  mkdirSync(opts.localDir, { recursive: true });
  const secretsFile = join(opts.localDir, 'secrets.env');
  if (!existsSync(secretsFile)) {
    writeFileSync(
      secretsFile,
      Object.entries(localSecrets())
        .map(([k, v]) => `${k}=${v}`)
        .join('\n') + '\n',
      { mode: 0o600 },
    );
  }
  const secrets = readEnvFile(secretsFile);
  writeFileSync(join(opts.localDir, 'admin-token'), secrets.ADMIN_TOKEN + '\n', { mode: 0o600 });
  const gateway = `http://127.0.0.1:${opts.gatewayPort}`;
  let natsUrl: string | undefined;
  const chatapp = await startChatappFake({
    port: opts.chatappFakePort,
    clientId: 'local-agent-platform',
    clientSecret: 'local-fake-client-secret',
    stateFile: join(opts.localDir, 'chatapp-fake.json'),
    devPages: {
      gatewayUrl: gateway,
      // Our bot side, played by the launcher: the chat user's "link me" reaches the chatapp service over NATS.
      // The page shows the answer: the link, or the problem (status and detail).
      completeLinkSession: (input) =>
        callInternalOnce(natsUrl!, completeLinkSession, input).catch((err: Error & { status?: number }) => ({
          status: err.status,
          detail: err.message,
        })),
    },
  });
  let stack: PrivateStack;
  try {
    stack = await startPrivateStack({
      name: opts.persistent ? 'platform' : 'devstack',
      ...(opts.persistent ? { nats: 'shared' as const, dbPrefix: 'platform', keepDatabases: true } : {}),
      secrets,
      gatewayPort: opts.gatewayPort,
      healthPorts: { base: opts.healthPortBase },
      logDir: join(opts.localDir, 'logs'),
      env: {
        LOG_LEVEL: opts.logLevel ?? 'info',
        ALLOW_LOOPBACK_WEBHOOKS: 'true',
        ANALYTICS_PORT: String(opts.analyticsPort),
        PUBLIC_BASE_URL: gateway,
        CHATAPP_API_URL: chatapp.apiUrl,
        CHATAPP_AUTHORIZE_URL: chatapp.authorizeUrl,
        CHATAPP_CLIENT_ID: chatapp.clientId,
        CHATAPP_CLIENT_SECRET: chatapp.clientSecret,
        CHATAPP_RESULT_URL: `${chatapp.url}/local/result`,
        CHATAPP_LINK_URL: `${chatapp.url}/local/link`,
      },
    });
  } catch (err) {
    await chatapp.close();
    throw err;
  }
  natsUrl = stack.natsUrl;
  stack.onStop(() => chatapp.close());
  const health = stack.processes.map((p) => ({ name: p.name, url: p.healthUrl! }));
  return {
    stack,
    chatapp,
    adminToken: stack.adminToken,
    urls: {
      gateway: stack.gatewayUrl,
      analytics: `http://127.0.0.1:${opts.analyticsPort}`,
      chatapp: chatapp.url,
      health,
    },
    stop: () => stack.stop(),
  };
}
