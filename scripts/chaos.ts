/**
 * pnpm chaos: faults under load on stacks of its own, then a table: fault, requests sent, accepted, lost,
 * duplicated, 5xx, time to recover.
 *
 *   SIGKILL of events-ingest, management, analytics and webhook-dispatcher under load (each restarted at once);
 *   NATS stopped and started again; the database (a private FerretDB on the shared PostgreSQL) restarted;
 *   one node of a three-node NATS cluster (streams replicated 3 times) killed during ingest and webhook delivery.
 *
 *   --only <name>   run the faults whose name contains it;  --total N   writes per fault (default 600)
 *
 * "accepted" counts distinct writes the API acknowledged (2xx; a 409 on a retried create means an earlier attempt
 * was stored); "lost" are accepted writes missing afterwards (from the database, or from the webhook receiver for
 * delivery faults); "duplicated" are extra rows or deliveries of one write; "recover" is the time from the fault to
 * the first write acknowledged after it.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect as netConnect } from 'node:net';
import {
  adminClient,
  anAnalyticsKey,
  anApiKey,
  aProject,
  ensureInfra,
  freePort,
  http,
  localSecrets,
  projectPath,
  removeNatsStore,
  repoRoot,
  startNatsServer,
  startReceiver,
  startStack,
  trackChild,
  withDatabase,
  type NatsServer,
  type Receiver,
  type Stack,
} from '@platform/testkit';

const TOTAL = Number(arg('total') ?? 600);
const WORKERS = 8;
const only = arg('only');

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

interface Row {
  fault: string;
  sent: number;
  accepted: number;
  lost: number | string;
  duplicated: number | string;
  '5xx': number;
  recoverMs: number | string;
}
const rows: Row[] = [];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function waitPort(port: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const s = netConnect(port, '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve()));
      s.once('error', () => {
        s.destroy();
        if (Date.now() > deadline) reject(new Error(`nothing listens on ${port}`));
        else setTimeout(attempt, 100);
      });
    };
    attempt();
  });
}

/**
 * Sends TOTAL writes with WORKERS in parallel; each write is retried with the same id until acknowledged. `fault`
 * runs once a third of them are acknowledged.
 */
async function load(send: (i: number) => Promise<number>, fault: () => Promise<void>) {
  let next = 0;
  let sent = 0;
  let fivexx = 0;
  const accepted = new Set<number>();
  let faultAt = 0;
  let recoveredAt = 0;
  const worker = async () => {
    while (next < TOTAL) {
      const i = next++;
      const deadline = Date.now() + 120_000;
      for (;;) {
        const startedAt = Date.now();
        sent++;
        let status = 0;
        try {
          status = await send(i);
        } catch {
          status = 0;
        }
        if (status >= 500) fivexx++;
        if ((status >= 200 && status < 300) || status === 409) {
          accepted.add(i);
          if (faultAt && !recoveredAt && startedAt >= faultAt) recoveredAt = Date.now();
          break;
        }
        if (Date.now() > deadline) break;
        await sleep(100);
      }
    }
  };
  const chaos = async () => {
    while (accepted.size < TOTAL / 3 && next < TOTAL) await sleep(10);
    faultAt = Date.now();
    await fault();
  };
  await Promise.all([...Array.from({ length: WORKERS }, worker), chaos()]);
  return { sent, accepted, fivexx, recoverMs: recoveredAt ? recoveredAt - faultAt : 'never' as const };
}

async function newStack(infra: { NATS_URL: string; REDIS_URL: string; MONGO_URL: string }, name: string, extra: Record<string, string> = {}, services?: string[]) {
  const secrets = localSecrets();
  const runId = `${name}-${Date.now().toString(36)}`;
  const analyticsPort = await freePort();
  const stack = await startStack({
    infra,
    services,
    logDir: join(repoRoot, '.infra', 'chaos-logs', runId),
    env: {
      ...secrets,
      MONGO_DB_PREFIX: 'chaos',
      LOG_LEVEL: 'warn',
      REDIS_KEY_PREFIX: `chaos:${runId}:`,
      ALLOW_LOOPBACK_WEBHOOKS: 'true',
      NATS_REQUEST_TIMEOUT_MS: '3000',
      WEBHOOK_RETRY_SCHEDULE_MS: '300,600,1200,2400,4800',
      WEBHOOK_POLL_INTERVAL_MS: '100',
      WEBHOOK_PARTITION: runId,
      OUTBOX_SWEEP_MS: '500',
      RATE_LIMIT_ENABLED: 'false',
      ANALYTICS_PORT: String(analyticsPort),
      ...extra,
    },
  });
  return { stack, admin: adminClient({ gatewayUrl: stack.gatewayUrl, adminToken: secrets.ADMIN_TOKEN! }), analyticsUrl: `http://127.0.0.1:${analyticsPort}` };
}

const killAndRestart = (stack: Stack, name: string) => async () => {
  const proc = stack.processes.find((p) => p.name === name)!;
  await stack.kill(proc, 'SIGKILL');
  await stack.startProcess(name);
};

async function countRows(mongoUrl: string, service: string, collection: string, filter: Record<string, unknown>, dbPrefix = 'chaos') {
  return withDatabase(mongoUrl, service, async (db) => db.collection(collection).find(filter).toArray(), dbPrefix);
}

/** Run events through the gateway; lost/duplicated from the events-ingest rows. */
async function runEventsFault(name: string, env: { stack: Stack; admin: ReturnType<typeof adminClient> }, fault: () => Promise<void>, receiver?: Receiver) {
  const p = aProject();
  const { key } = await anApiKey(env.admin, p);
  if (receiver) await env.admin.post(`${projectPath(p)}/webhook-destinations`, { name: 'chaos', url: receiver.url, eventTypes: ['event.created'] });
  const r = await load(async (i) => (await http('POST', `${env.stack.gatewayUrl}/run/v1/events`, { token: key, json: { id: `c-${i}`, type: 'chaos.tested' } })).status, fault);
  const stored = await countRows(env.stack.env.MONGO_URL!, 'events-ingest', 'runEvents', { tenantId: p.tenantId, projectId: p.projectId });
  const ids = stored.map((d) => String((d as { id?: string }).id));
  let lost = [...r.accepted].filter((i) => !ids.includes(`c-${i}`)).length;
  let duplicated = ids.length - new Set(ids).size;
  if (receiver) {
    const ours = (x: { json?: any }) => x.json?.tenantId === p.tenantId;
    await receiver.waitFor(ours, r.accepted.size, 120_000).catch(() => undefined);
    const delivered = receiver.received.filter(ours).map((x) => x.json.data.event.id as string);
    lost = Math.max(lost, [...r.accepted].filter((i) => !delivered.includes(`c-${i}`)).length);
    duplicated = delivered.length - new Set(delivered).size;
  }
  rows.push({ fault: name, sent: r.sent, accepted: r.accepted.size, lost, duplicated, '5xx': r.fivexx, recoverMs: r.recoverMs });
}

async function managementFault(env: { stack: Stack; admin: ReturnType<typeof adminClient> }) {
  const p = aProject();
  const r = await load(async (i) => (await env.admin.post(`${projectPath(p)}/feedback`, { id: `fb-${i}`, conversationId: 'c', type: 'positive' })).status, killAndRestart(env.stack, 'management'));
  const stored = await countRows(env.stack.env.MONGO_URL!, 'management', 'feedback', { tenantId: p.tenantId, projectId: p.projectId });
  const ids = stored.map((d) => String((d as { id?: string }).id ?? d._id).split(':').pop()!);
  rows.push({ fault: 'SIGKILL management (feedback creates)', sent: r.sent, accepted: r.accepted.size, lost: [...r.accepted].filter((i) => !ids.includes(`fb-${i}`)).length, duplicated: ids.length - new Set(ids).size, '5xx': r.fivexx, recoverMs: r.recoverMs });
}

async function analyticsFault(env: { stack: Stack; admin: ReturnType<typeof adminClient>; analyticsUrl: string }) {
  const p = aProject();
  const { key } = await anAnalyticsKey(env.admin, p);
  const r = await load(async (i) => (await http('POST', `${env.analyticsUrl}/events`, { token: key, json: { id: `a-${i}`, entityType: 'message', messageId: 'm', type: 'chaos' } })).status, killAndRestart(env.stack, 'analytics'));
  const dbs = await withDatabase(env.stack.env.MONGO_URL!, 'analytics', async (db) => (await db.listCollections().toArray()).map((c) => c.name), 'chaos');
  let ids: string[] = [];
  for (const c of dbs) {
    const found = await countRows(env.stack.env.MONGO_URL!, 'analytics', c, { tenantId: p.tenantId, projectId: p.projectId });
    const withIds = found.map((d) => String((d as { id?: string }).id ?? '')).filter((id) => id.startsWith('a-'));
    if (withIds.length > ids.length) ids = withIds;
  }
  rows.push({ fault: 'SIGKILL analytics (ingest)', sent: r.sent, accepted: r.accepted.size, lost: [...r.accepted].filter((i) => !ids.includes(`a-${i}`)).length, duplicated: ids.length - new Set(ids).size, '5xx': r.fivexx, recoverMs: r.recoverMs });
}

function ferretBinary(): string | undefined {
  for (const c of [process.env.FERRETDB_BIN, join(repoRoot, '.infra', 'bin', 'ferretdb'), '/work/main/.infra/bin/ferretdb']) if (c && existsSync(c)) return c;
  return undefined;
}

/** A private FerretDB on its own port (and debug port) against the shared PostgreSQL, so restarting it harms nobody. */
async function privateFerret(): Promise<{ url: string; stop(): Promise<void>; start(): Promise<void> } | undefined> {
  const bin = ferretBinary();
  if (!bin) return undefined;
  const port = await freePort();
  const debugPort = await freePort();
  const pg = `postgres://postgres@127.0.0.1:${process.env.INFRA_PG_PORT ?? 15432}/ferretdb?pool_max_conns=60`;
  let child: ChildProcess | undefined;
  const stateDir = join(repoRoot, '.infra', 'data', 'ferretdb-chaos-state');
  mkdirSync(stateDir, { recursive: true });
  const start = async () => {
    child = spawn(bin, ['--handler=postgresql', `--postgresql-url=${pg}`, `--listen-addr=127.0.0.1:${port}`, `--debug-addr=127.0.0.1:${debugPort}`, '--telemetry=disable', '--log-level=error', `--state-dir=${stateDir}`], { stdio: 'ignore' });
    trackChild(child);
    await waitPort(port);
  };
  await start();
  return {
    url: `mongodb://127.0.0.1:${port}/`,
    start,
    async stop() {
      const c = child;
      if (!c || c.exitCode !== null) return;
      await new Promise<void>((r) => (c.once('exit', () => r()), c.kill('SIGKILL')));
    },
  };
}

async function natsCluster(): Promise<NatsServer[]> {
  const clusterPorts = [await freePort(), await freePort(), await freePort()];
  const routes = clusterPorts.map((p) => `nats://127.0.0.1:${p}`).join(',');
  return Promise.all(
    clusterPorts.map((cp, i) =>
      startNatsServer({ args: ['--cluster', `nats://127.0.0.1:${cp}`, '--routes', routes, '--cluster_name', 'chaos', '--server_name', `chaos-${i}`] }),
    ),
  );
}

const want = (name: string) => !only || name.toLowerCase().includes(only.toLowerCase());

/** One fault; a fault that could not run is a row of its own instead of ending the whole run. */
async function attempt(name: string, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    console.error(`[chaos] ${name}: ${(err as Error).message}`);
    rows.push({ fault: name, sent: 0, accepted: 0, lost: `not run: ${(err as Error).message.slice(0, 80)}`, duplicated: '-', '5xx': 0, recoverMs: '-' });
  }
}

async function main() {
  const shared = ensureInfra();
  execFileSync(process.execPath, [join(repoRoot, 'scripts', 'build-service.mjs')], { stdio: 'inherit' });
  const receiver = await startReceiver();

  // One stack for the process kills and the NATS restart.
  if (want('sigkill') || want('nats stopped')) {
    const nats = await startNatsServer();
    const env = await newStack({ ...shared, NATS_URL: nats.url }, 'kill', {}, ['management', 'run-auth', 'events-ingest', 'analytics', 'webhook-dispatcher']);
    try {
      if (want('sigkill events-ingest')) await attempt('SIGKILL events-ingest', () => runEventsFault('SIGKILL events-ingest (run events)', env, killAndRestart(env.stack, 'events-ingest')));
      if (want('sigkill management')) await attempt('SIGKILL management', () => managementFault(env));
      if (want('sigkill analytics')) await attempt('SIGKILL analytics', () => analyticsFault(env));
      if (want('sigkill webhook-dispatcher')) await attempt('SIGKILL webhook-dispatcher', () => runEventsFault('SIGKILL webhook-dispatcher (deliveries)', env, killAndRestart(env.stack, 'webhook-dispatcher'), receiver));
      if (want('nats stopped')) {
        await attempt('NATS stopped', () =>
          runEventsFault('NATS stopped 5 s (run events)', env, async () => {
            await nats.stop();
            await sleep(5000);
            await nats.start();
          }),
        );
      }
    } finally {
      await env.stack.stop();
      await nats.stop();
      removeNatsStore(nats);
    }
  }

  if (want('database restarted')) {
    const ferret = await privateFerret();
    if (!ferret) rows.push({ fault: 'database restarted', sent: 0, accepted: 0, lost: 'skipped: no ferretdb binary', duplicated: '-', '5xx': 0, recoverMs: '-' });
    else {
      const nats = await startNatsServer();
      const env = await newStack({ ...shared, NATS_URL: nats.url, MONGO_URL: ferret.url }, 'db', {}, ['management', 'run-auth', 'events-ingest']);
      try {
        await attempt('database restarted', () =>
          runEventsFault('database restarted (FerretDB down 5 s)', env, async () => {
            await ferret.stop();
            await sleep(5000);
            await ferret.start();
          }),
        );
      } finally {
        await env.stack.stop();
        await ferret.stop();
        await nats.stop();
        removeNatsStore(nats);
      }
    }
  }

  if (want('cluster')) {
    const nodes = await natsCluster();
    await sleep(3000);
    const url = nodes.map((n) => n.url).join(',');
    const env = await newStack({ ...shared, NATS_URL: url }, 'cluster', { JS_REPLICAS: '3' }, ['management', 'run-auth', 'events-ingest', 'webhook-dispatcher']);
    try {
      await attempt('NATS cluster node killed', () =>
        runEventsFault('NATS cluster: 1 of 3 nodes SIGKILLed (ingest + delivery, R3)', env, async () => {
          await nodes[0]!.stop(true);
        }, receiver),
      );
    } finally {
      await env.stack.stop();
      // Killed outright: a clustered JetStream server can wait a long time on SIGTERM for peers that are gone, and
      // this cluster's data is thrown away.
      for (const n of nodes) {
        await n.stop(true);
        removeNatsStore(n);
      }
    }
  }

  await receiver.close();
  const header = ['fault', 'requests sent', 'accepted', 'lost', 'duplicated', '5xx', 'time to recover'];
  const lines = [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.fault} | ${r.sent} | ${r.accepted} | ${r.lost} | ${r.duplicated} | ${r['5xx']} | ${typeof r.recoverMs === 'number' ? `${(r.recoverMs / 1000).toFixed(1)} s` : r.recoverMs} |`),
  ];
  const table = lines.join('\n');
  console.log(`\n${table}\n`);
  writeFileSync(join(repoRoot, '.infra', 'chaos-last.md'), `${new Date().toISOString()}, ${TOTAL} writes per fault\n\n${table}\n`);
  const bad = rows.some((r) => (typeof r.lost === 'number' && r.lost > 0));
  return bad ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
