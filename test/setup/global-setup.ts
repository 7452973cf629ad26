import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomSecret } from '@platform/secrets';
import { ensureInfra, freePort, localSecrets, repoRoot, startChatappFake, startNatsServer, startStack, reapOrphans, type ChatappFakeServer, type NatsServer, type Stack } from '@platform/testkit';

declare global {
  var __STACK__: Stack | undefined;
  var __NATS__: NatsServer | undefined;
  var __CHATAPP_FAKE__: ChatappFakeServer | undefined;
}

/** Real infrastructure, fresh service bundles, and one whole stack shared by every test file. */
export default async function globalSetup(): Promise<void> {
  const shared = ensureInfra();
  // Processes left by a run that died without its teardown (they would hold ports, consumers and load).
  reapOrphans();
  // NATS is private to this run (queue groups and durable consumers are never shared with another run);
  // Redis and the database are shared, with per-run key prefixes and per-test tenants.
  const nats = await startNatsServer();
  globalThis.__NATS__ = nats;
  const infra = { ...shared, NATS_URL: nats.url };
  execFileSync(process.execPath, [join(repoRoot, 'scripts', 'build-service.mjs')], { stdio: 'inherit' });
  const secrets = localSecrets();
  // The chat product is a local fake (third-party API); the chatapp service is pointed at it.
  const chatappFake = await startChatappFake();
  globalThis.__CHATAPP_FAKE__ = chatappFake;
  const runId = Date.now().toString(36);
  const analyticsPort = await freePort();
  const stack = await startStack({
    infra,
    logDir: join(repoRoot, '.infra', 'test-logs', runId),
    env: {
      ...secrets,
      // A database set of its own per run: collections stay small and runs never see each other's outbox.
      MONGO_DB_PREFIX: `t${runId}`,
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
      REDIS_KEY_PREFIX: `test:${runId}:`,
      ALLOW_LOOPBACK_WEBHOOKS: 'true',
      // Every test calls from 127.0.0.1 and many prove 401s on purpose: the failed-authentication block is tested
      // on a gateway of its own (test/auth-hardening.test.ts).
      AUTH_FAILURE_LIMIT_PER_IP: '1000000',
      WEBHOOK_RETRY_SCHEDULE_MS: '200,400,800',
      WEBHOOK_CAP_WAIT_MS: '100',
      WEBHOOK_PARTITION: `test-${runId}`,
      ANALYTICS_PORT: String(analyticsPort),
      CHATAPP_API_URL: chatappFake.apiUrl,
      CHATAPP_AUTHORIZE_URL: chatappFake.authorizeUrl,
      CHATAPP_CLIENT_ID: chatappFake.clientId,
      CHATAPP_CLIENT_SECRET: chatappFake.clientSecret,
      CHATAPP_STATE_SECRET: randomSecret(32),
      CHATAPP_RESULT_URL: 'http://127.0.0.1/chatapp-result',
      CHATAPP_LINK_URL: 'http://127.0.0.1/chatapp-link',
      CREDENTIAL_GATEWAY_PLATFORMS_FILE: join(repoRoot, 'test', 'support', 'credential-gateway-platforms.json'),
    },
  });
  globalThis.__STACK__ = stack;
  mkdirSync(join(repoRoot, '.infra'), { recursive: true });
  writeFileSync(
    join(repoRoot, '.infra', 'test-stack.json'),
    JSON.stringify({ gatewayUrl: stack.gatewayUrl, analyticsUrl: `http://127.0.0.1:${analyticsPort}`, adminToken: secrets.ADMIN_TOKEN, env: stack.env, chatappFakeUrl: chatappFake.url }, null, 2),
  );
}
