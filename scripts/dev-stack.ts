/**
 * The local development stack (npm start): every service and the gateway as real processes on the
 * infrastructure of scripts/infra.sh. Secrets are generated once into .local/ (git-ignored).
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { localSecrets, readEnvFile, repoRoot, startPrivateStack } from '@platform/testkit';

async function main() {
  const local = join(repoRoot, '.local');
  mkdirSync(local, { recursive: true });
  const secretsFile = join(local, 'secrets.env');
  if (!existsSync(secretsFile)) {
    const s = localSecrets();
    writeFileSync(secretsFile, Object.entries(s).map(([k, v]) => `${k}=${v}`).join('\n') + '\n', { mode: 0o600 });
  }
  const secrets = readEnvFile(secretsFile);
  writeFileSync(join(local, 'admin-token'), secrets.ADMIN_TOKEN + '\n', { mode: 0o600 });
  const port = Number(process.env.GATEWAY_PORT ?? 3000);
  const analyticsPort = Number(process.env.ANALYTICS_PORT ?? 3001);
  console.log('[start] starting 8 services and the gateway…');
  // The servers of scripts/infra.sh, and data that stays from one start to the next.
  const stack = await startPrivateStack({
    name: 'platform',
    nats: 'shared',
    dbPrefix: 'platform',
    keepDatabases: true,
    secrets,
    gatewayPort: port,
    logDir: join(local, 'logs'),
    env: {
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
      ALLOW_LOOPBACK_WEBHOOKS: 'true',
      ANALYTICS_PORT: String(analyticsPort),
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    },
  });
  const infra = stack.env;
  writeFileSync(join(local, 'stack.pid'), String(process.pid));
  console.log(`
  Agent platform is up (local development stack)

  API gateway        ${stack.gatewayUrl}
  OpenAPI document   ${stack.gatewayUrl}/openapi.json
  Analytics ingest   http://127.0.0.1:${analyticsPort}/events
  NATS               ${infra.NATS_URL}
  Redis              ${infra.REDIS_URL}
  MongoDB wire       ${infra.MONGO_URL}
  Logs               .local/logs/

  Admin credential   written to .local/admin-token
                     export ADMIN_TOKEN=$(cat .local/admin-token)
                     curl -H "Authorization: Bearer $ADMIN_TOKEN" ${stack.gatewayUrl}/manage/tenants/acme/projects/demo/api-keys

  Development mode: webhook delivery to loopback receivers (127.0.0.1, localhost) is ALLOWED.
  Production configuration never allows it.

  Ctrl-C stops the services; \`npm run stop\` also stops NATS, Redis and the database.
`);
  const shutdown = async () => {
    console.log('\n[start] stopping services…');
    await stack.stop();
    process.exit(0);
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

main().catch((err) => {
  console.error('[start] failed:', err instanceof Error ? err.message : err);
  process.exit(1);
});
