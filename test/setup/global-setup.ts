import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomSecret } from '@platform/secrets';
import {
  ensureInfra,
  freePort,
  repoRoot,
  startChatappFake,
  startContainerInfra,
  startPrivateStack,
  reapOrphans,
  useContainerInfra,
  type ContainerInfra,
  type PrivateStack,
} from '@platform/testkit';

declare global {
  var __STACK__: PrivateStack | undefined;
  var __CONTAINERS__: ContainerInfra | undefined;
}

/** Real infrastructure, fresh service bundles, and one whole stack shared by every test file. */
export default async function globalSetup(): Promise<void> {
  // TEST_INFRA=containers: NATS, Redis and the database in containers of this run (testcontainers); the URLs go into
  // the environment, so test files that call ensureInfra() get them too.
  const containers = useContainerInfra() ? await startContainerInfra() : undefined;
  globalThis.__CONTAINERS__ = containers;
  if (containers)
    Object.assign(process.env, {
      NATS_URL: containers.NATS_URL,
      REDIS_URL: containers.REDIS_URL,
      MONGO_URL: containers.MONGO_URL,
    });
  else ensureInfra();
  // Processes left by a run that died without its teardown (they would hold ports, consumers and load).
  reapOrphans();
  execFileSync(process.execPath, [join(repoRoot, 'scripts', 'build-service.mjs')], { stdio: 'inherit' });
  // The chat product is a local fake (third-party API); the chatapp service is pointed at it.
  const chatappFake = await startChatappFake();
  const analyticsPort = await freePort();
  // NATS is private to this run (queue groups and durable consumers are never shared with another run); Redis and
  // the database are shared, with a key prefix and a database set of the run's own (dropped at the end of the run:
  // collections stay small and runs never see each other's outbox), and per-test tenants.
  const stack = await startPrivateStack({
    name: 'test',
    // A NATS container is private to this run already.
    ...(containers
      ? { infra: { NATS_URL: containers.NATS_URL, REDIS_URL: containers.REDIS_URL, MONGO_URL: containers.MONGO_URL } }
      : {}),
    env: {
      ALLOW_LOOPBACK_WEBHOOKS: 'true',
      // Every test calls from 127.0.0.1 and many prove 401s on purpose: the failed-authentication block is tested
      // on a gateway of its own (test/gateway/auth-hardening.test.ts).
      AUTH_FAILURE_LIMIT_PER_IP: '1000000',
      // Likewise the per-address request limit (6,000 a minute by default): the fuzz pass alone sends thousands of
      // requests a minute from 127.0.0.1 beside the other suites. The limits are tested on gateways of their own
      // (test/gateway/rate-limit.test.ts).
      RATE_LIMIT_PER_IP: '1000000',
      WEBHOOK_RETRY_SCHEDULE_MS: '200,400,800',
      WEBHOOK_CAP_WAIT_MS: '100',
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
  }).catch(async (err) => {
    await chatappFake.close();
    throw err;
  });
  stack.onStop(() => chatappFake.close());
  globalThis.__STACK__ = stack;
  mkdirSync(join(repoRoot, '.infra'), { recursive: true });
  writeFileSync(
    join(repoRoot, '.infra', 'test-stack.json'),
    JSON.stringify(
      {
        gatewayUrl: stack.gatewayUrl,
        analyticsUrl: `http://127.0.0.1:${analyticsPort}`,
        adminToken: stack.adminToken,
        env: stack.env,
        chatappFakeUrl: chatappFake.url,
        logDir: stack.logDir,
      },
      null,
      2,
    ),
  );
}
