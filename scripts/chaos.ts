/**
 * pnpm chaos: faults under load on stacks of its own, then a table: fault, requests sent, accepted, lost,
 * duplicated, 5xx, time to recover (also written to .infra/chaos/last.json and last.md, git-ignored).
 *
 *   SIGKILL of management, events-ingest, analytics, evals and webhook-dispatcher under load (each restarted at once);
 *   NATS stopped for 5 s and started again; the database restarted (a private PostgreSQL and FerretDB of this run,
 *   on ports of their own: the shared infrastructure is never stopped); one node of a three-node NATS cluster
 *   (streams replicated 3 times) killed during ingest and webhook delivery.
 *
 *   --only <name>   run the faults whose name contains it;  --total N   writes per fault (default 600)
 *
 * "accepted" counts distinct writes the API acknowledged (2xx; a 409 on a retried create means an earlier attempt
 * was stored); "lost" are accepted writes missing afterwards (read back from the owning service's database, and
 * for delivery faults also from what the webhook receiver got); "duplicated" are rows or deliveries beyond one per
 * accepted write; "5xx" counts server-error answers; "time to recover" runs from the end of the fault (the kill, or
 * the moment the stopped part is back) to the first write acknowledged after it (for delivery faults, to the first
 * webhook delivery after it, when that is later). Duplicated deliveries that repeat a webhook-id are marked: webhooks
 * are at least once (a delivery in flight when the dispatcher is SIGKILLed is sent again with the same webhook-id,
 * which receivers dedupe on); the run fails on a failed phase, a lost write or any other duplicate.
 *
 * Every phase (stack start, fault under load, read-back, teardown) has a time bound: a phase over its bound is a
 * failed row of the table, never a hang, and the run as a whole has a bound too.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as netConnect } from 'node:net';
import {
  anAnalyticsKey,
  anApiKey,
  aProject,
  ensureInfra,
  freePort,
  projectPath,
  removeNatsStore,
  repoRoot,
  startNatsServer,
  startPrivateStack,
  startReceiver,
  trackChild,
  withDatabase,
  type Client,
  type InfraEnv,
  type NatsServer,
  type PrivateStack,
  type Receiver,
  type Stack,
} from '@platform/testkit';

const TOTAL = Number(arg('total') ?? 600);
const WORKERS = 8;
const only = arg('only');
/** One HTTP request of the load never waits longer than this. */
const REQUEST_TIMEOUT_MS = 15_000;
/** A write is retried (same id) until acknowledged or this long has passed. */
const WRITE_DEADLINE_MS = 120_000;
/** How long a delivery fault waits, after its load, for every accepted event to reach the receiver. */
const DELIVERY_WAIT_MS = 150_000;
const BOUND = {
  stackStart: 120_000,
  fault: 300_000,
  readBack: 150_000,
  teardown: 60_000,
  run: 45 * 60_000,
};
const runId = Date.now().toString(36);
const dbPrefix = `chaos${runId}`;
const t0 = Date.now();

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function say(msg: string): void {
  console.log(`[chaos +${((Date.now() - t0) / 1000).toFixed(1)} s] ${msg}`);
}

interface Row {
  fault: string;
  sent: number;
  accepted: number;
  lost: number | string;
  duplicated: number | string;
  '5xx': number;
  recoverMs: number | string;
  /** Duplicated deliveries that were redeliveries of one delivery (same webhook-id): at-least-once, receivers dedupe. */
  redeliveries?: number;
}
const rows: Row[] = [];

/** Sleeps; an aborted signal ends the sleep early. */
const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((r) => {
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      r();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });

class PhaseTimeout extends Error {}

/** Runs one phase with a time bound; over it, the phase's signal is aborted and the phase fails (it never hangs). */
async function bounded<T>(label: string, ms: number, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ac = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const started = Date.now();
  say(`${label}: started (bound ${ms / 1000} s)`);
  try {
    return await Promise.race([
      fn(ac.signal),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          ac.abort();
          reject(new PhaseTimeout(`${label} exceeded its bound of ${ms / 1000} s`));
        }, ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
    say(`${label}: ended after ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
}

function failedRow(fault: string, err: unknown): void {
  const msg = (err as Error).message ?? String(err);
  console.error(`[chaos] ${fault}: ${msg}`);
  rows.push({ fault, sent: 0, accepted: 0, lost: `FAILED: ${msg.slice(0, 100)}`, duplicated: '-', '5xx': 0, recoverMs: '-' });
}

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

/** One POST of the load: its status, or 0 when there was no answer (connection refused, reset or timed out). */
async function post(url: string, token: string, json: unknown): Promise<number> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(json),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    await res.arrayBuffer().catch(() => undefined);
    return res.status;
  } catch {
    return 0;
  }
}

interface LoadResult {
  sent: number;
  accepted: Set<number>;
  fivexx: number;
  recoverMs: number | 'never';
  /** When the fault ended (epoch ms). */
  faultEnd: number;
}

/**
 * Sends TOTAL writes with WORKERS in parallel; each write is retried with the same id until acknowledged. `fault`
 * runs once a third of them are acknowledged and calls `end()` when the fault is over (the kill happened, or the
 * stopped part is back); recovery is measured from then to the first acknowledged write sent after the fault began.
 */
async function load(send: (i: number) => Promise<number>, fault: (end: () => void) => Promise<void>, signal: AbortSignal): Promise<LoadResult> {
  let next = 0;
  let sent = 0;
  let fivexx = 0;
  const accepted = new Set<number>();
  let faultAt = 0;
  let faultEnd = 0;
  let recoveredAt = 0;
  let stop = false;
  const worker = async () => {
    while (next < TOTAL && !stop && !signal.aborted) {
      const i = next++;
      const deadline = Date.now() + WRITE_DEADLINE_MS;
      while (!signal.aborted) {
        const startedAt = Date.now();
        sent++;
        const status = await send(i);
        if (status >= 500) fivexx++;
        if ((status >= 200 && status < 300) || status === 409) {
          accepted.add(i);
          if (faultEnd && !recoveredAt && startedAt >= faultAt) recoveredAt = Date.now();
          break;
        }
        if (Date.now() > deadline) break;
        await sleep(100, signal);
      }
    }
  };
  const chaos = async () => {
    while (accepted.size < TOTAL / 3 && next < TOTAL && !signal.aborted) await sleep(10);
    faultAt = Date.now();
    say(`fault begins (${accepted.size} accepted so far)`);
    try {
      await fault(() => {
        faultEnd = Date.now();
        say(`fault over after ${faultEnd - faultAt} ms`);
      });
    } catch (err) {
      stop = true;
      throw err;
    }
    if (!faultEnd) faultEnd = Date.now();
  };
  const workers = Promise.all(Array.from({ length: WORKERS }, worker));
  try {
    await chaos();
  } finally {
    await workers;
  }
  return { sent, accepted, fivexx, recoverMs: recoveredAt ? Math.max(0, recoveredAt - faultEnd) : 'never', faultEnd };
}

type Env = { stack: PrivateStack; admin: Client; adminToken: string; analyticsUrl: string };

/** A private stack of the run (its own NATS unless `infra` names one); its databases are dropped when it stops. */
async function newStack(name: string, services: string[], opts: { infra?: Partial<InfraEnv>; env?: Record<string, string> } = {}): Promise<Env> {
  const stack = await startPrivateStack({
    name,
    services,
    infra: opts.infra,
    // One prefix for the run's stacks (one after another): the read-backs below look there.
    dbPrefix,
    logDir: join(repoRoot, '.infra', 'chaos-logs', `${name}-${runId}`),
    env: {
      ALLOW_LOOPBACK_WEBHOOKS: 'true',
      NATS_REQUEST_TIMEOUT_MS: '3000',
      WEBHOOK_RETRY_SCHEDULE_MS: '300,600,1200,2400,4800,9600,9600',
      WEBHOOK_CAP_WAIT_MS: '100',
      OUTBOX_SWEEP_MS: '500',
      RATE_LIMIT_ENABLED: 'false',
      AUTH_FAILURE_LIMIT_PER_IP: '1000000',
      ...opts.env,
    },
  });
  return { stack, admin: stack.admin, adminToken: stack.adminToken, analyticsUrl: stack.analyticsUrl };
}

/** Stops a stack within its bound; past it, its processes are killed outright. */
async function stopStack(label: string, env: Env | undefined): Promise<void> {
  if (!env) return;
  try {
    await bounded(`teardown ${label}`, BOUND.teardown, () => env.stack.stop());
  } catch (err) {
    for (const p of env.stack.processes) p.child.kill('SIGKILL');
    failedRow(`teardown of the ${label} stack`, err);
  }
}

const killAndRestart = (stack: Stack, name: string) => async (end: () => void) => {
  const proc = stack.processes.find((p) => p.name === name);
  if (!proc) throw new Error(`no ${name} process in the stack`);
  await stack.kill(proc, 'SIGKILL');
  end();
  await stack.startProcess(name);
};

async function readRows(mongoUrl: string, service: string, collection: string, filter: Record<string, unknown>) {
  return withDatabase(mongoUrl, service, async (db) => db.collection(collection).find(filter).toArray(), dbPrefix);
}

interface Delivered {
  eventId: string;
  webhookId: string;
  at: number;
}

/**
 * A row from what was accepted and the ids found afterwards (`found` may hold an id more than once); with
 * `delivered`, an accepted write also counts as lost when it never reached the receiver, and recovery also waits for
 * the first delivery after the fault.
 */
function rowOf(fault: string, r: LoadResult, key: (i: number) => string, found: string[], delivered?: Delivered[]): Row {
  const have = new Set(found);
  const missing = new Set([...r.accepted].map(key).filter((k) => !have.has(k)));
  let duplicated = found.length - have.size;
  let redeliveries: number | undefined;
  let recoverMs = r.recoverMs;
  if (delivered) {
    const got = new Set(delivered.map((d) => d.eventId));
    for (const i of r.accepted) if (!got.has(key(i))) missing.add(key(i));
    duplicated += delivered.length - got.size;
    // Of those, the ones that repeat an earlier delivery's webhook-id (one delivery record sent twice).
    redeliveries = delivered.length - new Set(delivered.map((d) => d.webhookId)).size;
    const firstAfter = delivered.filter((d) => d.at >= r.faultEnd).reduce((m, d) => Math.min(m, d.at), Infinity);
    const deliveryRecovery = Number.isFinite(firstAfter) ? firstAfter - r.faultEnd : 'never';
    recoverMs = recoverMs === 'never' || deliveryRecovery === 'never' ? 'never' : Math.max(recoverMs, deliveryRecovery);
  }
  return { fault, sent: r.sent, accepted: r.accepted.size, lost: missing.size, duplicated, '5xx': r.fivexx, recoverMs, redeliveries };
}

/** Run events through the gateway (and, with a receiver, their webhook deliveries); read back from events-ingest. */
async function runEventsFault(name: string, env: Env, fault: (end: () => void) => Promise<void>, signal: AbortSignal, receiver?: Receiver): Promise<Row> {
  const p = aProject();
  const { key } = await anApiKey(env.admin, p);
  if (receiver) {
    const res = await env.admin.post(`${projectPath(p)}/webhook-destinations`, { name: 'chaos', url: receiver.url, eventTypes: ['event.created'] });
    if (res.status !== 201) throw new Error(`creating the webhook destination: ${res.status}`);
  }
  const r = await load((i) => post(`${env.stack.gatewayUrl}/run/v1/events`, key, { id: `c-${i}`, type: 'chaos.tested' }), fault, signal);
  say(`${name}: ${r.accepted.size} accepted; reading back`);
  const stored = await readRows(env.stack.env.MONGO_URL!, 'events-ingest', 'runEvents', { tenantId: p.tenantId, projectId: p.projectId });
  const ids = stored.map((d) => String((d as { id?: string }).id));
  let delivered: Delivered[] | undefined;
  if (receiver) {
    const ours = (x: { json?: any }) => x.json?.tenantId === p.tenantId;
    // Deliveries are retried on their schedule: wait until every accepted event arrived (or the phase's bound).
    const want = new Set([...r.accepted].map((i) => `c-${i}`));
    // Long enough for a claim left by a killed dispatcher to run out (its lease is about 50 s) and the retries after.
    const deadline = Date.now() + DELIVERY_WAIT_MS;
    while (!signal.aborted && Date.now() < deadline) {
      const got = new Set(receiver.received.filter(ours).map((x) => x.json.data.event.id as string));
      if ([...want].every((id) => got.has(id))) break;
      await sleep(250, signal);
    }
    await sleep(2000, signal); // late duplicates (a redelivered message) would show up now
    delivered = receiver.received.filter(ours).map((x) => ({ eventId: x.json.data.event.id as string, webhookId: String(x.headers['webhook-id']), at: x.at }));
  }
  return rowOf(name, r, (i) => `c-${i}`, ids, delivered);
}

async function managementFault(env: Env, signal: AbortSignal): Promise<Row> {
  const p = aProject();
  const r = await load((i) => post(`${env.stack.gatewayUrl}${projectPath(p)}/feedback`, env.adminToken, { id: `fb-${i}`, conversationId: 'c', type: 'positive' }), killAndRestart(env.stack, 'management'), signal);
  const stored = await readRows(env.stack.env.MONGO_URL!, 'management', 'feedback', { tenantId: p.tenantId, projectId: p.projectId });
  const ids = stored.map((d) => String((d as { id?: string }).id ?? d._id).split(':').pop()!);
  return rowOf('SIGKILL management (feedback creates)', r, (i) => `fb-${i}`, ids);
}

async function evalsFault(env: Env, signal: AbortSignal): Promise<Row> {
  const p = aProject();
  const url = `${env.stack.gatewayUrl}${projectPath(p)}/evals/dataset-items/chaos/items`;
  const r = await load((i) => post(url, env.adminToken, { id: `ev-${i}`, input: { messages: [{ role: 'user', content: `question ${i}` }] } }), killAndRestart(env.stack, 'evals'), signal);
  const stored = await readRows(env.stack.env.MONGO_URL!, 'evals', 'datasetItems', { tenantId: p.tenantId, projectId: p.projectId });
  const ids = stored.map((d) => String((d as { id?: string }).id));
  return rowOf('SIGKILL evals (dataset item creates)', r, (i) => `ev-${i}`, ids);
}

async function analyticsFault(env: Env, signal: AbortSignal): Promise<Row> {
  const p = aProject();
  const { key } = await anAnalyticsKey(env.admin, p);
  const r = await load((i) => post(`${env.analyticsUrl}/events`, key, { id: `a-${i}`, entityType: 'message', messageId: 'm', type: 'chaos' }), killAndRestart(env.stack, 'analytics'), signal);
  const collections = await withDatabase(env.stack.env.MONGO_URL!, 'analytics', async (db) => (await db.listCollections().toArray()).map((c) => c.name), dbPrefix);
  let ids: string[] = [];
  for (const c of collections) {
    const found = await readRows(env.stack.env.MONGO_URL!, 'analytics', c, { tenantId: p.tenantId, projectId: p.projectId });
    const withIds = found.map((d) => String((d as { id?: string }).id ?? '')).filter((id) => id.startsWith('a-'));
    if (withIds.length > ids.length) ids = withIds;
  }
  return rowOf('SIGKILL analytics (ingest)', r, (i) => `a-${i}`, ids);
}

function ferretBinary(): string | undefined {
  for (const c of [process.env.FERRETDB_BIN, join(repoRoot, '.infra', 'bin', 'ferretdb'), '/work/main/.infra/bin/ferretdb']) if (c && existsSync(c)) return c;
  return undefined;
}

function pgBin(): string | undefined {
  try {
    const dir = execFileSync('bash', ['-c', 'ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1'], { encoding: 'utf8' }).trim();
    return dir && existsSync(join(dir, 'initdb')) ? dir : undefined;
  } catch {
    return undefined;
  }
}

interface PrivateDatabase {
  url: string;
  /** Stops PostgreSQL (immediate: like a crash) and FerretDB, waits, starts both again. */
  restart(downMs: number, end: () => void): Promise<void>;
  destroy(): void;
}

/**
 * A PostgreSQL and a FerretDB of this run only, on ports of their own (and a debug port of its own), in a temporary
 * folder: restarting them harms nobody. The shared infrastructure is never stopped.
 */
async function privateDatabase(): Promise<PrivateDatabase> {
  const ferret = ferretBinary();
  const pg = pgBin();
  if (!ferret || !pg) throw new Error(`needs ${!ferret ? 'the ferretdb binary (scripts/infra.sh up builds it)' : 'PostgreSQL (initdb)'}`);
  const root = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'chaos-db-'));
  const data = join(dir, 'pg');
  const sock = join(dir, 'sock');
  mkdirSync(data);
  mkdirSync(sock);
  if (root) {
    execFileSync('bash', ['-c', 'id postgres >/dev/null 2>&1 || useradd -r -m postgres']);
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    for (const d of [dir, data, sock]) chownSync(d, uid, -1);
  }
  const sh = (cmd: string) => execFileSync(root ? 'su' : 'bash', root ? ['postgres', '-s', '/bin/bash', '-c', cmd] : ['-c', cmd], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 60_000 });
  const pgPort = await freePort();
  const port = await freePort();
  const debugPort = await freePort();
  sh(`${pg}/initdb -D '${data}' -U postgres --auth=trust -E UTF8`);
  const pgStart = () =>
    sh(`${pg}/pg_ctl -D '${data}' -l '${dir}/postgres.log' -w -t 30 -o "-p ${pgPort} -k ${sock} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start`);
  const pgStop = () => sh(`${pg}/pg_ctl -D '${data}' -m immediate -w -t 30 stop`);
  pgStart();
  sh(`${pg}/psql -h 127.0.0.1 -p ${pgPort} -U postgres -qc 'CREATE DATABASE ferretdb'`);
  let child: ChildProcess | undefined;
  const ferretStart = async () => {
    child = spawn(
      ferret,
      [
        '--handler=postgresql',
        `--postgresql-url=postgres://postgres@127.0.0.1:${pgPort}/ferretdb?pool_max_conns=60`,
        `--listen-addr=127.0.0.1:${port}`,
        `--debug-addr=127.0.0.1:${debugPort}`,
        '--telemetry=disable',
        '--log-level=error',
        `--state-dir=${dir}`,
      ],
      { stdio: 'ignore' },
    );
    trackChild(child);
    await waitPort(port);
  };
  const ferretStop = async () => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    await new Promise<void>((r) => (c.once('exit', () => r()), c.kill('SIGKILL')));
  };
  await ferretStart();
  say(`private database: PostgreSQL on ${pgPort}, FerretDB on ${port} (${dir})`);
  return {
    url: `mongodb://127.0.0.1:${port}/`,
    async restart(downMs, end) {
      await ferretStop();
      pgStop();
      await sleep(downMs);
      pgStart();
      await ferretStart();
      end();
    },
    destroy() {
      child?.kill('SIGKILL');
      try {
        pgStop();
      } catch {
        /* not running */
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function natsCluster(): Promise<NatsServer[]> {
  const clusterPorts = [await freePort(), await freePort(), await freePort()];
  const routes = clusterPorts.map((p) => `nats://127.0.0.1:${p}`).join(',');
  return Promise.all(
    clusterPorts.map((cp, i) => startNatsServer({ args: ['--cluster', `nats://127.0.0.1:${cp}`, '--routes', routes, '--cluster_name', 'chaos', '--server_name', `chaos-${i}`] })),
  );
}

const want = (name: string) => !only || name.toLowerCase().includes(only.toLowerCase());

/** One fault within its bound; a fault that fails or runs over is a row of its own, and the run goes on. */
async function fault(name: string, fn: (signal: AbortSignal) => Promise<Row>): Promise<void> {
  try {
    rows.push(await bounded(name, BOUND.fault, fn));
  } catch (err) {
    failedRow(name, err);
  }
}

function table(): string {
  const header = ['fault', 'requests sent', 'accepted', 'lost', 'duplicated', '5xx', 'time to recover'];
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.fault} | ${r.sent} | ${r.accepted} | ${r.lost} | ${r.duplicated}${r.redeliveries ? ` (${r.redeliveries} repeat a webhook-id)` : ''} | ${r['5xx']} | ${typeof r.recoverMs === 'number' ? `${(r.recoverMs / 1000).toFixed(1)} s` : r.recoverMs} |`),
  ].join('\n');
}

function report(extra = ''): number {
  const t = table();
  console.log(`\n${t}\n${extra}`);
  const dir = join(repoRoot, '.infra', 'chaos');
  mkdirSync(dir, { recursive: true });
  const at = new Date().toISOString();
  const json = JSON.stringify({ at, runId, writesPerFault: TOTAL, durationMs: Date.now() - t0, rows }, null, 2);
  writeFileSync(join(dir, 'last.json'), json);
  writeFileSync(join(dir, `${runId}.json`), json);
  writeFileSync(join(dir, 'last.md'), `${at}, ${TOTAL} writes per fault\n\n${t}\n${extra}`);
  say(`table written to .infra/chaos/last.json and last.md`);
  // Failed: a failed phase, a lost write, or a duplicate that is not a redelivery of one webhook-id (webhooks are
  // at least once: a delivery in flight when the dispatcher is killed is sent again with the same webhook-id).
  const bad = rows.some((r) => typeof r.lost !== 'number' || r.lost > 0 || (typeof r.duplicated === 'number' && r.duplicated > (r.redeliveries ?? 0)));
  return bad ? 1 : 0;
}

async function main() {
  // The run as a whole is bounded too: past it, the table so far is printed and the run ends.
  setTimeout(() => {
    failedRow('the whole run', new PhaseTimeout(`exceeded ${BOUND.run / 60_000} min`));
    process.exit(report());
  }, BOUND.run).unref();

  ensureInfra();
  execFileSync(process.execPath, [join(repoRoot, 'scripts', 'build-service.mjs')], { stdio: 'inherit' });
  const receiver = await startReceiver();

  // One stack for the process kills and the NATS restart (its own nats-server).
  if (['sigkill', 'nats stopped'].some(want) || want('sigkill management') || want('sigkill evals')) {
    let env: Env | undefined;
    try {
      env = await bounded('start the kill stack', BOUND.stackStart, () =>
        newStack('kill', ['management', 'run-auth', 'events-ingest', 'analytics', 'evals', 'webhook-dispatcher']),
      );
      const e = env;
      if (want('sigkill management')) await fault('SIGKILL management (feedback creates)', (s) => managementFault(e, s));
      if (want('sigkill events-ingest')) await fault('SIGKILL events-ingest (run events)', (s) => runEventsFault('SIGKILL events-ingest (run events)', e, killAndRestart(e.stack, 'events-ingest'), s));
      if (want('sigkill analytics')) await fault('SIGKILL analytics (ingest)', (s) => analyticsFault(e, s));
      if (want('sigkill evals')) await fault('SIGKILL evals (dataset item creates)', (s) => evalsFault(e, s));
      if (want('sigkill webhook-dispatcher'))
        await fault('SIGKILL webhook-dispatcher (deliveries)', (s) => runEventsFault('SIGKILL webhook-dispatcher (deliveries)', e, killAndRestart(e.stack, 'webhook-dispatcher'), s, receiver));
      if (want('nats stopped'))
        await fault('NATS stopped 5 s (run events)', (s) =>
          runEventsFault(
            'NATS stopped 5 s (run events)',
            e,
            async (end) => {
              await e.stack.nats!.stop();
              await sleep(5000);
              await e.stack.nats!.start();
              end();
            },
            s,
          ),
        );
    } catch (err) {
      failedRow('kill stack', err);
    } finally {
      await stopStack('kill', env);
    }
  }

  if (want('database restarted')) {
    const name = 'database restarted (private PostgreSQL + FerretDB down 5 s)';
    let db: PrivateDatabase | undefined;
    let env: Env | undefined;
    try {
      db = await bounded('start the private database', BOUND.stackStart, () => privateDatabase());
      const mongoUrl = db.url;
      env = await bounded('start the database stack', BOUND.stackStart, () => newStack('db', ['management', 'run-auth', 'events-ingest'], { infra: { MONGO_URL: mongoUrl } }));
      const e = env;
      const d = db;
      await fault(name, (s) => runEventsFault(name, e, (end) => d.restart(5000, end), s));
    } catch (err) {
      failedRow(name, err);
    } finally {
      await stopStack('database', env);
      db?.destroy();
    }
  }

  if (want('cluster')) {
    const name = 'NATS cluster: 1 of 3 nodes SIGKILLed (ingest + delivery, R3)';
    let nodes: NatsServer[] = [];
    let env: Env | undefined;
    try {
      nodes = await natsCluster();
      await sleep(3000);
      const url = nodes.map((n) => n.url).join(',');
      env = await bounded('start the cluster stack', BOUND.stackStart, () =>
        newStack('cluster', ['management', 'run-auth', 'events-ingest', 'webhook-dispatcher'], { infra: { NATS_URL: url }, env: { JS_REPLICAS: '3' } }),
      );
      const e = env;
      const victim = nodes[0]!;
      await fault(name, (s) =>
        runEventsFault(
          name,
          e,
          async (end) => {
            await victim.stop(true);
            end();
          },
          s,
          receiver,
        ),
      );
    } catch (err) {
      failedRow(name, err);
    } finally {
      await stopStack('cluster', env);
      // Killed outright (this cluster's data is thrown away); stop() returns at once for the node killed earlier.
      for (const n of nodes) {
        await bounded(`stop cluster node ${n.port}`, 15_000, () => n.stop(true)).catch((err) => failedRow(`stop cluster node ${n.port}`, err));
        removeNatsStore(n);
      }
    }
  }

  await bounded('close the receiver', 10_000, () => receiver.close()).catch((err) => failedRow('close the receiver', err));
  return report();
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    failedRow('the whole run', err);
    process.exit(report());
  },
);
