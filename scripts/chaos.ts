/**
 * pnpm chaos: faults under load on stacks of its own, then a table: fault, requests sent, accepted, lost,
 * duplicated, 5xx (split into requests safe to repeat and the others), no answer, time to recover (also written to
 * .infra/chaos/last.json and last.md, git-ignored).
 *
 *   SIGKILL of management, events-ingest, analytics, evals and webhook-dispatcher under load (each restarted at once);
 *   NATS stopped for 5 s and started again; the database restarted (a private PostgreSQL and FerretDB of this run,
 *   on ports of their own: the shared infrastructure is never stopped); one node of a three-node NATS cluster
 *   (streams replicated 3 times) killed during ingest and webhook delivery.
 *
 *   Two replicas of management, events-ingest, analytics and evals (a stack of its own): for each, SIGKILL of one
 *   replica (started again) and a rolling restart (a new replica started and ready before the old one gets SIGTERM,
 *   in turn, as a Deployment does); then two gateways behind a balancer that routes to ready gateways only (/readyz
 *   every 100 ms), restarted in turn. Targets: 0 5xx for requests safe to repeat after a SIGKILL, and no failed
 *   request at all in a rolling restart (a missed target fails the run).
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
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BackendServiceName, ServiceName } from '@platform/contracts';
import {
  anAnalyticsKey,
  anApiKey,
  aProject,
  ensureInfra,
  freePort,
  projectPath,
  repoRoot,
  startNatsServer,
  startPrivateStack,
  privateDatabase,
  type PrivateDatabase,
  startReceiver,
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
  lostIds?: string[];
  duplicated: number | string;
  '5xx': number;
  /** Of the 5xx: requests that were safe to repeat (reads, events with an id), which the gateway sends again. */
  '5xxSafe': number;
  /** Of the 5xx: the others (creates without a key of their own). */
  '5xxNotSafe': number;
  recoverMs: number | string;
  /** Duplicated deliveries that were redeliveries of one delivery (same webhook-id): at-least-once, receivers dedupe. */
  redeliveries?: number;
  /** Requests that got no answer at all (connection refused or reset, timed out). */
  failed?: number;
  /** Failed answers by status (`0`: no answer; ` safe`: of requests safe to repeat). */
  errors?: Record<string, number>;
  /** The row's target beyond 0 lost and 0 duplicated: no 5xx for requests safe to repeat, or no failed request at all. */
  target?: 'no 5xx when safe to repeat' | 'no failed request';
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
  rows.push({
    fault,
    sent: 0,
    accepted: 0,
    lost: `FAILED: ${msg.slice(0, 100)}`,
    duplicated: '-',
    '5xx': 0,
    '5xxSafe': 0,
    '5xxNotSafe': 0,
    recoverMs: '-',
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

/** One GET of the load: its status, or 0 when there was no answer. */
async function get(url: string, token: string): Promise<number> {
  try {
    const res = await fetch(url, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    await res.arrayBuffer().catch(() => undefined);
    return res.status;
  } catch {
    return 0;
  }
}

/**
 * One write of the load and whether it is safe to repeat (`gatewayMayRepeat` of its operation: an event with an id
 * is, a create is not), and optionally a read after it is accepted (always safe to repeat).
 */
interface Step {
  write: (i: number) => Promise<number>;
  writeSafe: boolean;
  read?: (i: number) => Promise<number>;
}

interface LoadResult {
  sent: number;
  accepted: Set<number>;
  fivexx: number;
  fivexxSafe: number;
  fivexxNotSafe: number;
  /** Requests with no answer at all (connection refused or reset, or timed out). */
  failed: number;
  /** How many of each failed status (0: no answer). */
  errors: Record<string, number>;
  /** From the fault's end to the first write accepted after it; `load ended first` when every write was answered
   * before the fault was over (nothing left to recover), `never` when writes still failed at the end. */
  recoverMs: number | 'never' | 'load ended first';
  /** When the fault ended (epoch ms). */
  faultEnd: number;
  /** Every status each write got, in order (0: no answer). */
  answers: Map<number, number[]>;
}

/**
 * Sends TOTAL writes with WORKERS in parallel; each write is retried with the same id until acknowledged. `fault`
 * runs once a third of them are acknowledged and calls `end()` when the fault is over (the kill happened, or the
 * stopped part is back); recovery is measured from then to the first acknowledged write sent after the fault began.
 */
async function load(
  step: Step | ((i: number) => Promise<number>),
  fault: (end: () => void) => Promise<void>,
  signal: AbortSignal,
): Promise<LoadResult> {
  const { write, writeSafe, read } =
    typeof step === 'function' ? { write: step, writeSafe: true, read: undefined } : step;
  let next = 0;
  let sent = 0;
  let fivexx = 0;
  let fivexxSafe = 0;
  let fivexxNotSafe = 0;
  let failed = 0;
  const errors: Record<string, number> = {};
  const count = (status: number, safe: boolean) => {
    sent++;
    if (status === 0 || status >= 500)
      errors[`${status}${safe ? ' safe' : ''}`] = (errors[`${status}${safe ? ' safe' : ''}`] ?? 0) + 1;
    if (status === 0) failed++;
    if (status >= 500) {
      fivexx++;
      if (safe) fivexxSafe++;
      else fivexxNotSafe++;
    }
  };
  const accepted = new Set<number>();
  const answers = new Map<number, number[]>();
  let faultAt = 0;
  let faultEnd = 0;
  let recoveredAt = 0;
  let lastAnswerAt = 0;
  let stop = false;
  const worker = async () => {
    while (next < TOTAL && !stop && !signal.aborted) {
      const i = next++;
      const deadline = Date.now() + WRITE_DEADLINE_MS;
      while (!signal.aborted) {
        const startedAt = Date.now();
        const status = await write(i);
        count(status, writeSafe);
        answers.set(i, [...(answers.get(i) ?? []), status]);
        lastAnswerAt = Date.now();
        if ((status >= 200 && status < 300) || status === 409) {
          accepted.add(i);
          if (faultEnd && !recoveredAt && startedAt >= faultAt) recoveredAt = Date.now();
          if (read) count(await read(i), true);
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
  return {
    sent,
    accepted,
    fivexx,
    fivexxSafe,
    fivexxNotSafe,
    failed,
    errors,
    recoverMs: recoveredAt
      ? Math.max(0, recoveredAt - faultEnd)
      : lastAnswerAt <= faultEnd
        ? 'load ended first'
        : 'never',
    faultEnd,
    answers,
  };
}

type Env = { stack: PrivateStack; admin: Client; adminToken: string; analyticsUrl: string };

/** A private stack of the run (its own NATS unless `infra` names one); its databases are dropped when it stops. */
async function newStack(
  name: string,
  services: BackendServiceName[],
  opts: {
    infra?: Partial<InfraEnv>;
    env?: Record<string, string>;
    replicas?: Partial<Record<ServiceName, number>>;
  } = {},
): Promise<Env> {
  const stack = await startPrivateStack({
    name,
    services,
    infra: opts.infra,
    replicas: opts.replicas,
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

const killAndRestart = (stack: Stack, name: ServiceName) => async (end: () => void) => {
  const proc = stack.processes.find((p) => p.name === name);
  if (!proc) throw new Error(`no ${name} process in the stack`);
  await stack.kill(proc, 'SIGKILL');
  end();
  await stack.startProcess(name);
};

/** A rolling restart, as a Deployment does it: for each replica in turn, a new one is started (and ready) before the old one gets SIGTERM. */
const rollingRestart = (stack: Stack, name: ServiceName) => async (end: () => void) => {
  for (const old of stack.processes.filter((p) => p.name === name)) {
    await stack.startProcess(name);
    await stack.kill(old, 'SIGTERM');
  }
  end();
};

/**
 * A local load balancer in the client: requests go round robin to the gateways whose /readyz answered 200 at the last
 * check (every 100 ms), as a Kubernetes Service routes to ready endpoints only.
 */
function gatewayPool(stack: Stack) {
  const ready = new Map<string, boolean>();
  let turn = 0;
  let stopped = false;
  const gateways = () => stack.processes.filter((p) => p.name === 'gateway' && p.url).map((p) => p.url!);
  const checks = (async () => {
    while (!stopped) {
      const now = gateways();
      for (const g of [...ready.keys()]) if (!now.includes(g)) ready.delete(g);
      await Promise.all(now.map(async (g) => ready.set(g, (await get(`${g}/readyz`, '')) === 200)));
      await sleep(100);
    }
  })();
  return {
    pick(): string {
      const live = [...ready].filter(([, ok]) => ok).map(([g]) => g);
      return live[turn++ % Math.max(1, live.length)] ?? stack.gatewayUrl;
    },
    isReady: (url: string) => ready.get(url) === true,
    async close() {
      stopped = true;
      await checks;
    },
  };
}

/** Rolling restart of the gateways behind the pool: a new one starts and is seen ready before the old one gets SIGTERM. */
const rollingGateways = (stack: Stack, pool: ReturnType<typeof gatewayPool>) => async (end: () => void) => {
  for (const old of stack.processes.filter((p) => p.name === 'gateway')) {
    const fresh = await stack.startProcess('gateway');
    while (!pool.isReady(fresh.url!)) await sleep(50);
    await stack.kill(old, 'SIGTERM');
  }
  end();
};

async function readRows(mongoUrl: string, service: string, collection: string, filter: Record<string, unknown>) {
  return withDatabase(mongoUrl, service, async (db) => db.collection(collection).find(filter).toArray(), dbPrefix);
}

/** A stored row's own id: its `id` field, or the end of a scoped `_id` (`<tenant>:<project>:<id>`, run events keep it only there). */
const storedIdOf = (d: { id?: unknown; _id: unknown }) =>
  d.id != null ? String(d.id) : String(d._id).split(':').pop()!;

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
function rowOf(
  fault: string,
  r: LoadResult,
  key: (i: number) => string,
  found: string[],
  delivered?: Delivered[],
): Row {
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
    if (recoverMs === 'never' || deliveryRecovery === 'never') recoverMs = 'never';
    else recoverMs = recoverMs === 'load ended first' ? deliveryRecovery : Math.max(recoverMs, deliveryRecovery);
  }
  // The first lost writes with every answer their requests got, to find where they went.
  const lostIds = [...r.accepted]
    .filter((i) => missing.has(key(i)))
    .slice(0, 20)
    .map((i) => `${key(i)} (${r.answers.get(i)?.join(',')})`);
  if (lostIds.length) say(`${fault}: lost ${lostIds.join('; ')}`);
  return {
    fault,
    sent: r.sent,
    accepted: r.accepted.size,
    lost: missing.size,
    lostIds,
    duplicated,
    '5xx': r.fivexx,
    '5xxSafe': r.fivexxSafe,
    '5xxNotSafe': r.fivexxNotSafe,
    failed: r.failed,
    errors: r.errors,
    recoverMs,
    redeliveries,
  };
}

/** Run events through the gateway (and, with a receiver, their webhook deliveries); read back from events-ingest. */
async function runEventsFault(
  name: string,
  env: Env,
  fault: (end: () => void) => Promise<void>,
  signal: AbortSignal,
  receiver?: Receiver,
  base: () => string = () => env.stack.gatewayUrl,
): Promise<Row> {
  const p = aProject();
  const { key } = await anApiKey(env.admin, p);
  if (receiver) {
    const res = await env.admin.post(`${projectPath(p)}/webhook-destinations`, {
      name: 'chaos',
      url: receiver.url,
      eventTypes: ['event.created'],
    });
    if (res.status !== 201) throw new Error(`creating the webhook destination: ${res.status}`);
  }
  // Events with an id: safe to repeat (the gateway sends one again to another replica when none answered).
  const r = await load(
    { write: (i) => post(`${base()}/run/v1/events`, key, { id: `c-${i}`, type: 'chaos.tested' }), writeSafe: true },
    fault,
    signal,
  );
  say(`${name}: ${r.accepted.size} accepted; reading back`);
  const stored = await readRows(env.stack.env.MONGO_URL!, 'events-ingest', 'runEvents', {
    tenantId: p.tenantId,
    projectId: p.projectId,
  });
  const ids = stored.map(storedIdOf);
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
    delivered = receiver.received
      .filter(ours)
      .map((x) => ({ eventId: x.json.data.event.id as string, webhookId: String(x.headers['webhook-id']), at: x.at }));
  }
  return rowOf(name, r, (i) => `c-${i}`, ids, delivered);
}

/**
 * Feedback creates (not safe to repeat: a create without an Idempotency-Key), each accepted one read back by id (safe),
 * when `reads`.
 */
async function managementFault(
  env: Env,
  signal: AbortSignal,
  name = 'SIGKILL management (feedback creates)',
  fault = killAndRestart(env.stack, 'management'),
  reads = false,
): Promise<Row> {
  const p = aProject();
  const path = `${env.stack.gatewayUrl}${projectPath(p)}/feedback`;
  const step: Step = {
    write: (i) => post(path, env.adminToken, { id: `fb-${i}`, conversationId: 'c', type: 'positive' }),
    writeSafe: false,
  };
  if (reads) step.read = (i) => get(`${path}/fb-${i}`, env.adminToken);
  const r = await load(step, fault, signal);
  const stored = await readRows(env.stack.env.MONGO_URL!, 'management', 'feedback', {
    tenantId: p.tenantId,
    projectId: p.projectId,
  });
  const ids = stored.map(storedIdOf);
  return rowOf(name, r, (i) => `fb-${i}`, ids);
}

/** Dataset item creates (not safe to repeat), each accepted one read back by id (safe) when `reads`. */
async function evalsFault(
  env: Env,
  signal: AbortSignal,
  name = 'SIGKILL evals (dataset item creates)',
  fault = killAndRestart(env.stack, 'evals'),
  reads = false,
): Promise<Row> {
  const p = aProject();
  const url = `${env.stack.gatewayUrl}${projectPath(p)}/evals/dataset-items/chaos/items`;
  const step: Step = {
    write: (i) =>
      post(url, env.adminToken, { id: `ev-${i}`, input: { messages: [{ role: 'user', content: `question ${i}` }] } }),
    writeSafe: false,
  };
  if (reads) step.read = (i) => get(`${url}/ev-${i}`, env.adminToken);
  const r = await load(step, fault, signal);
  const stored = await readRows(env.stack.env.MONGO_URL!, 'evals', 'datasetItems', {
    tenantId: p.tenantId,
    projectId: p.projectId,
  });
  const ids = stored.map(storedIdOf);
  return rowOf(name, r, (i) => `ev-${i}`, ids);
}

/** Analytics events with an id (safe to repeat), each accepted one followed by a read of the counts (safe) when `reads`. */
async function analyticsFault(
  env: Env,
  signal: AbortSignal,
  name = 'SIGKILL analytics (ingest)',
  fault = killAndRestart(env.stack, 'analytics'),
  reads = false,
): Promise<Row> {
  const p = aProject();
  const { key } = await anAnalyticsKey(env.admin, p);
  const step: Step = {
    write: (i) =>
      post(`${env.analyticsUrl}/events`, key, { id: `a-${i}`, entityType: 'message', messageId: 'm', type: 'chaos' }),
    writeSafe: true,
  };
  if (reads) step.read = () => get(`${env.stack.gatewayUrl}${projectPath(p)}/analytics/counts`, env.adminToken);
  const r = await load(step, fault, signal);
  const collections = await withDatabase(
    env.stack.env.MONGO_URL!,
    'analytics',
    async (db) => (await db.listCollections().toArray()).map((c) => c.name),
    dbPrefix,
  );
  let ids: string[] = [];
  for (const c of collections) {
    const found = await readRows(env.stack.env.MONGO_URL!, 'analytics', c, {
      tenantId: p.tenantId,
      projectId: p.projectId,
    });
    const withIds = found.map((d) => String((d as { id?: string }).id ?? '')).filter((id) => id.startsWith('a-'));
    if (withIds.length > ids.length) ids = withIds;
  }
  return rowOf(name, r, (i) => `a-${i}`, ids);
}

async function natsCluster(): Promise<NatsServer[]> {
  const clusterPorts = [await freePort(), await freePort(), await freePort()];
  const routes = clusterPorts.map((p) => `nats://127.0.0.1:${p}`).join(',');
  return Promise.all(
    clusterPorts.map((cp, i) =>
      startNatsServer({
        args: [
          '--cluster',
          `nats://127.0.0.1:${cp}`,
          '--routes',
          routes,
          '--cluster_name',
          'chaos',
          '--server_name',
          `chaos-${i}`,
        ],
      }),
    ),
  );
}

const want = (name: string) => !only || name.toLowerCase().includes(only.toLowerCase());

/** One fault within its bound; a fault that fails or runs over is a row of its own, and the run goes on. */
async function fault(name: string, fn: (signal: AbortSignal) => Promise<Row>, target?: Row['target']): Promise<void> {
  try {
    rows.push({ ...(await bounded(name, BOUND.fault, fn)), ...(target ? { target } : {}) });
  } catch (err) {
    failedRow(name, err);
  }
}

function table(): string {
  const header = [
    'fault',
    'requests sent',
    'accepted',
    'lost',
    'duplicated',
    '5xx (safe to repeat / not)',
    'no answer',
    'time to recover',
  ];
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...rows.map(
      (r) =>
        `| ${r.fault} | ${r.sent} | ${r.accepted} | ${r.lost} | ${r.duplicated}${r.redeliveries ? ` (${r.redeliveries} repeat a webhook-id)` : ''} | ${r['5xx']} (${r['5xxSafe']} / ${r['5xxNotSafe']}) | ${r.failed ?? 0} | ${typeof r.recoverMs === 'number' ? `${(r.recoverMs / 1000).toFixed(1)} s` : r.recoverMs} |`,
    ),
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
  const missed = (r: Row) =>
    (r.target === 'no 5xx when safe to repeat' && (r['5xxSafe'] > 0 || (r.failed ?? 0) > 0)) ||
    (r.target === 'no failed request' && (r['5xx'] > 0 || (r.failed ?? 0) > 0));
  for (const r of rows.filter(missed)) console.error(`[chaos] target missed (${r.target}): ${r.fault}`);
  const bad = rows.some(
    (r) =>
      typeof r.lost !== 'number' ||
      r.lost > 0 ||
      (typeof r.duplicated === 'number' && r.duplicated > (r.redeliveries ?? 0)) ||
      missed(r),
  );
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
      if (want('sigkill management'))
        await fault('SIGKILL management (feedback creates)', (s) => managementFault(e, s));
      if (want('sigkill events-ingest'))
        await fault('SIGKILL events-ingest (run events)', (s) =>
          runEventsFault('SIGKILL events-ingest (run events)', e, killAndRestart(e.stack, 'events-ingest'), s),
        );
      if (want('sigkill analytics')) await fault('SIGKILL analytics (ingest)', (s) => analyticsFault(e, s));
      if (want('sigkill evals')) await fault('SIGKILL evals (dataset item creates)', (s) => evalsFault(e, s));
      if (want('sigkill webhook-dispatcher'))
        await fault('SIGKILL webhook-dispatcher (deliveries)', (s) =>
          runEventsFault(
            'SIGKILL webhook-dispatcher (deliveries)',
            e,
            killAndRestart(e.stack, 'webhook-dispatcher'),
            s,
            receiver,
          ),
        );
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

  // Two replicas of each service under load: one SIGKILLed (and started again), then a rolling restart; last, two
  // gateways behind a readiness-checking balancer restarted in turn.
  const replicaServices: Array<
    [
      BackendServiceName,
      string,
      (env: Env, s: AbortSignal, name: string, fault: (end: () => void) => Promise<void>) => Promise<Row>,
    ]
  > = [
    ['management', 'feedback creates + reads', (e, s, name, f) => managementFault(e, s, name, f, true)],
    ['events-ingest', 'run events with ids', (e, s, name, f) => runEventsFault(name, e, f, s)],
    ['analytics', 'ingest with ids + count reads', (e, s, name, f) => analyticsFault(e, s, name, f, true)],
    ['evals', 'dataset item creates + reads', (e, s, name, f) => evalsFault(e, s, name, f, true)],
  ];
  const replicaRows = replicaServices.flatMap(([svc, what]) => [
    `2 replicas, SIGKILL one: ${svc} (${what})`,
    `2 replicas, rolling restart: ${svc} (${what})`,
  ]);
  const gatewayRow = '2 replicas of the gateway behind a balancer, rolling restart (run events with ids)';
  if ([...replicaRows, gatewayRow].some(want)) {
    let env: Env | undefined;
    try {
      env = await bounded('start the replicas stack', BOUND.stackStart, () =>
        newStack('replicas', ['management', 'run-auth', 'events-ingest', 'analytics', 'evals'], {
          // A deadline of 8 s in attempts of 2 s: a request held by a killed replica is answered by another one after 2 s.
          env: {
            SHUTDOWN_GRACE_MS: '10000',
            SHUTDOWN_DELAY_MS: '1500',
            NATS_REQUEST_TIMEOUT_MS: '8000',
            RETRY_ATTEMPT_TIMEOUT_MS: '2000',
          },
          replicas: { management: 2, 'events-ingest': 2, analytics: 2, evals: 2, gateway: 2 },
        }),
      );
      const e = env;
      for (const [svc, what, run] of replicaServices) {
        const killName = `2 replicas, SIGKILL one: ${svc} (${what})`;
        if (want(killName))
          await fault(killName, (s) => run(e, s, killName, killAndRestart(e.stack, svc)), 'no 5xx when safe to repeat');
        const rollName = `2 replicas, rolling restart: ${svc} (${what})`;
        if (want(rollName))
          await fault(rollName, (s) => run(e, s, rollName, rollingRestart(e.stack, svc)), 'no failed request');
      }
      if (want(gatewayRow)) {
        const pool = gatewayPool(e.stack);
        try {
          await fault(
            gatewayRow,
            (s) => runEventsFault(gatewayRow, e, rollingGateways(e.stack, pool), s, undefined, () => pool.pick()),
            'no failed request',
          );
        } finally {
          await pool.close();
        }
      }
    } catch (err) {
      failedRow('replicas stack', err);
    } finally {
      await stopStack('replicas', env);
    }
  }

  if (want('database restarted')) {
    const name = 'database restarted (private PostgreSQL + FerretDB down 5 s)';
    let db: PrivateDatabase | undefined;
    let env: Env | undefined;
    try {
      db = await bounded('start the private database', BOUND.stackStart, () => privateDatabase({ log: say }));
      const mongoUrl = db.url;
      env = await bounded('start the database stack', BOUND.stackStart, () =>
        newStack('db', ['management', 'run-auth', 'events-ingest'], { infra: { MONGO_URL: mongoUrl } }),
      );
      const e = env;
      const d = db;
      await fault(name, (s) => runEventsFault(name, e, (end) => d.restart(5000, end), s));
      if (rows.some((r) => r.fault === name && typeof r.lost !== 'number'))
        say(`${name}: the private database's logs\n${d.logTail(40)}`);
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
        newStack('cluster', ['management', 'run-auth', 'events-ingest', 'webhook-dispatcher'], {
          infra: { NATS_URL: url },
          env: { JS_REPLICAS: '3' },
        }),
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
      // Killed outright (this cluster's data is thrown away, its store removed); stopping returns at once for the node killed earlier.
      for (const n of nodes) {
        await bounded(`stop cluster node ${n.port}`, 15_000, () => n.destroy(true)).catch((err) =>
          failedRow(`stop cluster node ${n.port}`, err),
        );
      }
    }
  }

  await bounded('close the receiver', 10_000, () => receiver.close()).catch((err) =>
    failedRow('close the receiver', err),
  );
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
