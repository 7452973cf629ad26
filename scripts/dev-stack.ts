/**
 * The local development stack (npm start): every service and the gateway as real processes on the
 * infrastructure of scripts/infra.sh, each with a health port, plus the test kit's fake of the chat product
 * (development only). Secrets are generated once into .local/ (git-ignored).
 * Ports: GATEWAY_PORT (3000), ANALYTICS_PORT (3001), CHATAPP_FAKE_PORT (3002), HEALTH_PORT_BASE (3100: one port per
 * process, in the order printed).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ALL_SERVICES, repoRoot, startDevStack } from '@platform/testkit';

const port = (name: string, def: number) => Number(process.env[name] ?? def);

async function main() {
  const local = join(repoRoot, '.local');
  console.log(`[start] starting ${ALL_SERVICES.length} services, the gateway and the chat product fake…`);
  const dev = await startDevStack({
    localDir: local,
    persistent: true,
    gatewayPort: port('GATEWAY_PORT', 3000),
    analyticsPort: port('ANALYTICS_PORT', 3001),
    chatappFakePort: port('CHATAPP_FAKE_PORT', 3002),
    healthPortBase: port('HEALTH_PORT_BASE', 3100),
    logLevel: process.env.LOG_LEVEL,
  });
  const infra = dev.stack.env;
  writeFileSync(join(local, 'stack.pid'), String(process.pid));
  const { gateway, analytics, chatapp, health } = dev.urls;
  const width = Math.max(...health.map((h) => h.name.length));
  const healthLines = health
    .map((h) => `  ${h.name.padEnd(width)}  ${h.url}/metrics  ${h.url}/healthz  ${h.url}/readyz`)
    .join('\n');
  console.log(`
  Agent platform is up (local development stack)

  API gateway        ${gateway}
  OpenAPI document   ${gateway}/openapi.json   (reference: ${gateway}/docs)
  Analytics ingest   ${analytics}/events
  Chat product fake  ${chatapp}   (workspaces, channels and the messages the app posted)
  NATS               ${infra.NATS_URL}   (JWT authentication; credentials in .local/nats/, admin.creds for the nats CLI)
  Redis              ${infra.REDIS_URL}
  MongoDB wire       ${infra.MONGO_URL}
  Logs               .local/logs/

  Health and metrics of each process (HEALTH_PORT; a local Prometheus can scrape /metrics):
${healthLines}

  Admin credential   written to .local/admin-token
                     export ADMIN_TOKEN=$(cat .local/admin-token)
                     curl -H "Authorization: Bearer $ADMIN_TOKEN" ${gateway}/manage/tenants/acme/projects/demo/api-keys

  Event consumers    pnpm nats:credentials consumer --tenant acme --project demo --out .local/acme-demo.creds
                     pnpm example:events -- --creds .local/acme-demo.creds

  Chat app           POST ${gateway}/work-apps/chatapp/install-links {"tenantId":"acme","projectId":"demo"} (admin token), open data.url
                     in a browser, allow it in "Local Workspace", then follow the result page.

  Development mode: webhook delivery to loopback receivers (127.0.0.1, localhost) is ALLOWED, and the chat
  product is a local fake. Production configuration never allows either.

  Ctrl-C stops the services; \`npm run stop\` also stops NATS, Redis and the database.
`);
  const shutdown = async () => {
    console.log('\n[start] stopping services…');
    await dev.stop();
    process.exit(0);
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

main().catch((err) => {
  console.error('[start] failed:', err instanceof Error ? err.message : err);
  process.exit(1);
});
