// A day in ten minutes: a bounded soak of mixed traffic (run events with a webhook, analytics batches, management
// reads and writes) over ten projects, at half the rate the stack reached in a short closed-loop probe, for
// --soak-minutes (default 10), on services run as the production image runs them (its node flags). The resident memory
// of every process, and the p99 per interval (of all operations and of each kind) go in the JSON and in a plot
// (docs/images/soak.png); afterwards every accepted write is read back, every stored event must have reached the webhook
// receiver, and each project's delivery log and analytics counters must count what was stored.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { baseConfig } from '@platform/config';
import { anAnalyticsKey, anApiKey, aProject, projectPath, repoRoot, type Receiver } from '@platform/testkit';
import { machineTicks } from '../../bench/cpu';
import { procName, rssMb } from '../../bench/processes';
import { productionNodeArgs, productionProcessEnv } from '../../bench/stacks';
import { get, type LoadResult, post, tally, type Tally } from '../load';
import { plotPng } from '../plot';
import { readRows, rowOf, storedIdOf } from '../readback';
import { bounded, failedRow, fault, type Row, rows } from '../report';
import { arg, BOUND, DELIVERY_WAIT_MS, say, sleep, want, WRITE_DEADLINE_MS } from '../run';
import { type Env, newStack, stopStack } from '../stacks';
import { storedAnalyticsIds } from '../workloads';

const MINUTES = Number(arg('soak-minutes') ?? 10);
const name = `soak: a day in ${MINUTES} minute${MINUTES === 1 ? '' : 's'} (mixed traffic at half the measured max rate)`;
/** The row's name across runs of any length (render.ts merges by it). */
const KEY = 'soak';
/** The closed-loop probe of the maximum rate. */
const PROBE_MS = 15_000;
const PROBE_WORKERS = 32;
/** Operations of the paced load in flight at most (beyond, the generator itself is behind: counted, not sent). */
const MAX_IN_FLIGHT = 512;
const BATCH = 10;
const INTERVALS = 20;
/** How long the read-back asks the delivery log and the analytics counts until they count what was sent. */
const READ_BACK_MS = 120_000;
export const SOAK_PNG = join(repoRoot, 'docs', 'images', 'soak.png');

export type Kind = 'event' | 'analytics' | 'read' | 'write';
/** Ten operations in turn: five run events, two analytics batches, two management reads, one management write. */
const KINDS: readonly Kind[] = [
  'event',
  'analytics',
  'event',
  'read',
  'event',
  'write',
  'event',
  'analytics',
  'event',
  'read',
];
const kindOf = (i: number) => KINDS[i % KINDS.length]!;
/** The traffic goes to this many projects (of as many tenants), the ten operations of a turn of KINDS to one. */
const PROJECTS = 10;
const projectOf = (i: number) => Math.floor(i / KINDS.length) % PROJECTS;
/**
 * Operations of one project in one conversation (50 run events and 10 feedback): conversations end, as they do, and
 * a new run event reads its conversation's earlier ones (the latest userProperties).
 */
const CONVERSATION_OPS = 100;
const conversationOf = (i: number) => `c-${Math.floor(i / (CONVERSATION_OPS * PROJECTS))}`;
/** The id a write stores (an analytics batch: its events' ids start with it). */
const idOf = (i: number) => `s${kindOf(i)[0]}-${i}`;

/** Requests of one kind of operation: how many, their p99 answer time, and how many were not served (5xx, none). */
export interface KindFigures {
  n: number;
  p99Ms: number | null;
  notServed: number;
}

export interface Check {
  expected: number;
  found: number | null;
  readFailed?: string;
}

export interface SoakFigures {
  minutes: number;
  maxRatePerS: number;
  ratePerS: number;
  /** Operations the generator could not start (over its own bound of operations in flight). */
  notSent: number;
  /** What each kind of operation answered in the probe. */
  probe: Record<Kind, KindFigures>;
  /** p99 of all operations per interval, and the same per kind of operation. */
  intervals: Array<{ fromS: number; ops: number; p99Ms: number | null; byKind: Record<Kind, KindFigures> }>;
  rssMb: Record<string, { start: number; peak: number; end: number }>;
  rssSamples: Array<{ atS: number } & Record<string, number>>;
  /**
   * Every 5 s: how busy the machine's CPUs were since the last sample, and the longest the load generator's event loop
   * was held up (a request it sent then was timed from its start: a stall of the generator shows as a p99 of the stack).
   */
  machineSamples: Array<{ atS: number; cpuBusyPct: number; generatorLoopDelayMaxMs: number }>;
  /** What was sent against what the API counts; `found` null when the count could not be read (`readFailed` says why). */
  checks: Record<string, Check>;
}

const p99Of = (ms: number[]): number | null => {
  const sorted = [...ms].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]! : null;
};

/** Per kind of operation: requests, p99 and those not served. */
function byKind(requests: Array<{ ms: number; kind: Kind; served: boolean }>): Record<Kind, KindFigures> {
  const of = (kind: Kind): KindFigures => {
    const mine = requests.filter((q) => q.kind === kind);
    return { n: mine.length, p99Ms: p99Of(mine.map((q) => q.ms)), notServed: mine.filter((q) => !q.served).length };
  };
  return { event: of('event'), analytics: of('analytics'), read: of('read'), write: of('write') };
}

/** One line of figures per kind: `event 120 p99 35 ms (0 not served)`. */
const kindLine = (k: Record<Kind, KindFigures>) =>
  Object.entries(k)
    .map(([kind, f]) => `${kind} ${f.n} p99 ${f.p99Ms ?? '-'} ms (${f.notServed} not served)`)
    .join(', ');

/**
 * A count the API answers (`countOf` its 200 body), read until it is what was sent or `until` has passed: the stack may
 * still be writing the last delivery records, or busy with the end of the load (a 503 or a 504 is asked again, backing
 * off). A count that never matched is the last one read; a read that never succeeded is a failed read, not a count.
 */
async function counted(
  env: Env,
  path: string,
  countOf: (body: any) => unknown,
  expected: number,
  until: number,
  signal: AbortSignal,
): Promise<Check> {
  const answers: string[] = [];
  let found: number | null = null;
  for (let tries = 0; !signal.aborted; tries++) {
    const startedAt = Date.now();
    const res = await env.admin.get(path).catch((err: Error) => ({ status: 0, body: err.message }));
    const ms = Date.now() - startedAt;
    const n = res.status === 200 ? Number(countOf(res.body)) : NaN;
    if (Number.isFinite(n)) found = n;
    else answers.push(`${res.status || 'no answer'} after ${ms} ms`);
    say(
      `read back ${path.split('?')[0]!.split('/').slice(-2).join('/')}: ${res.status}, ${n} of ${expected}, ${ms} ms`,
    );
    if (found === expected || Date.now() > until) break;
    await sleep(Math.min(10_000, 500 * 2 ** tries), signal);
  }
  if (found !== null) return { expected, found };
  return { expected, found, readFailed: `read failed (${answers.length} tries: ${answers.slice(-3).join(', ')})` };
}

/** `counted` for each project's count, added up: a failed read of any of them is a failed read of the sum. */
async function countedAll(
  env: Env,
  reads: Array<{ path: string; expected: number }>,
  countOf: (body: any) => unknown,
  until: number,
  signal: AbortSignal,
): Promise<Check> {
  const each: Check[] = [];
  for (const r of reads) each.push(await counted(env, r.path, countOf, r.expected, until, signal));
  const expected = each.reduce((a, c) => a + c.expected, 0);
  const failed = each.find((c) => c.found === null);
  if (failed) return { expected, found: null, readFailed: failed.readFailed };
  return { expected, found: each.reduce((a, c) => a + c.found!, 0) };
}

export async function soakRows(receiver: Receiver): Promise<void> {
  if (!want(name)) return;
  let env: Env | undefined;
  try {
    env = await bounded('start the soak stack', BOUND.stackStart, () =>
      newStack('soak', ['management', 'run-auth', 'events-ingest', 'analytics', 'webhook-dispatcher'], {
        // Memory as the production image has it: its node flags (a 256 MB old generation, no source maps) and C library;
        // and the production deadline of a request (the fault rows' 3 s shows a dead replica quickly, not wanted here).
        nodeArgs: productionNodeArgs(undefined),
        env: {
          ...productionProcessEnv(),
          NATS_REQUEST_TIMEOUT_MS: String(baseConfig.shape.NATS_REQUEST_TIMEOUT_MS.parse(undefined)),
        },
      }),
    );
    const e = env;
    // Its own bound: the soak, the probe, the deliveries and the read-back.
    await fault(
      name,
      (s) => soak(e, receiver, s),
      undefined,
      MINUTES * 60_000 + PROBE_MS + 60_000 + DELIVERY_WAIT_MS + BOUND.readBack,
    );
  } catch (err) {
    failedRow(name, err);
  } finally {
    await stopStack('soak', env);
    // A failed soak replaces the last one too.
    for (const r of rows) if (r.fault === name) r.key = KEY;
  }
}

/** One project of the soak: its run-API key, its analytics key and its webhook destination (to the receiver). */
interface SoakProject {
  p: { tenantId: string; projectId: string };
  key: string;
  analyticsKey: string;
  destinationId: string;
}

async function aSoakProject(env: Env, receiver: Receiver): Promise<SoakProject> {
  const p = aProject();
  const { key } = await anApiKey(env.admin, p);
  const { key: analyticsKey } = await anAnalyticsKey(env.admin, p);
  const dest = await env.admin.post(`${projectPath(p)}/webhook-destinations`, {
    name: 'soak',
    url: receiver.url,
    eventTypes: ['event.created'],
  });
  if (dest.status !== 201) throw new Error(`creating the webhook destination: ${dest.status}`);
  return { p, key, analyticsKey, destinationId: dest.body.data.id as string };
}

async function soak(env: Env, receiver: Receiver, signal: AbortSignal): Promise<Row> {
  const projects: SoakProject[] = [];
  for (let k = 0; k < PROJECTS; k++) projects.push(await aSoakProject(env, receiver));
  const gw = env.stack.gatewayUrl;
  const send = (i: number): Promise<number> => {
    const { p, key, analyticsKey } = projects[projectOf(i)]!;
    const feedback = `${gw}${projectPath(p)}/feedback`;
    switch (kindOf(i)) {
      case 'event':
        return post(`${gw}/run/v1/events`, key, {
          id: idOf(i),
          type: 'soak.tested',
          conversationId: conversationOf(i),
        });
      case 'analytics':
        return post(`${env.analyticsUrl}/events/batch`, analyticsKey, {
          events: Array.from({ length: BATCH }, (_, j) => ({
            id: `${idOf(i)}-${j}`,
            entityType: 'message',
            messageId: `m-${i}`,
            type: 'soak',
          })),
        });
      case 'write':
        return post(feedback, env.adminToken, { id: idOf(i), conversationId: conversationOf(i), type: 'positive' });
      case 'read':
        // The feedback of the conversation going on (a project's whole list costs a read of every row on FerretDB).
        return get(`${feedback}?conversationId=${conversationOf(i)}&limit=10`, env.adminToken);
    }
  };
  const t: Tally = { sent: 0, fivexx: 0, fivexxSafe: 0, fivexxNotSafe: 0, failed: 0, errors: {} };
  const accepted = new Set<number>();
  const answers = new Map<number, number[]>();
  const timings: Array<[number, number]> = [];
  /** Every request: when it was sent, how long its answer took, its kind and whether it was served. */
  const requests: Array<{ at: number; ms: number; kind: Kind; served: boolean }> = [];
  let served = 0;
  /** One operation: a write is sent again (same id) until accepted or past its deadline; a read once. */
  const run = async (i: number) => {
    const deadline = Date.now() + WRITE_DEADLINE_MS;
    for (let attempt = 0; ; attempt++) {
      const startedAt = Date.now();
      const status = await send(i);
      timings.push([startedAt, Date.now() - startedAt]);
      const ok = (status >= 200 && status < 300) || status === 409;
      requests.push({ at: startedAt, ms: Date.now() - startedAt, kind: kindOf(i), served: ok });
      // Every operation here is safe to repeat (events, batches and feedback with ids; reads).
      tally(t, status, true);
      answers.set(i, [...(answers.get(i) ?? []), status]);
      if (ok) served++;
      if (ok && kindOf(i) !== 'read') accepted.add(i);
      if (ok || kindOf(i) === 'read' || Date.now() > deadline || signal.aborted) return;
      // As a well-behaved client does: after the Retry-After of a 503 (1 s) and backing off (2, 4, … 30 s, with
      // jitter), not at once: retries at a fixed pace multiply the load of an overloaded stack (a retry storm).
      await sleep(Math.min(30_000, 1000 * 2 ** attempt) * (0.5 + Math.random() / 2), signal);
    }
  };

  // The maximum rate: a closed loop of PROBE_WORKERS for PROBE_MS, counted until the work it left behind (webhook
  // deliveries) is done too, so the rate includes the asynchronous part of each operation.
  let next = 0;
  const probeStart = Date.now();
  const probeEnd = probeStart + PROBE_MS;
  await Promise.all(
    Array.from({ length: PROBE_WORKERS }, async () => {
      while (Date.now() < probeEnd && !signal.aborted) await run(next++);
    }),
  );
  const tenants = new Set(projects.map(({ p }) => p.tenantId));
  const ours = (x: { json?: any }) => tenants.has(x.json?.tenantId);
  const deliveredIds = () => new Set(receiver.received.filter(ours).map((x) => x.json.data.event.id as string));
  const allDelivered = async (ids: string[], ms: number) => {
    const until = Date.now() + ms;
    while (!signal.aborted && Date.now() < until) {
      const got = deliveredIds();
      if (ids.every((id) => got.has(id))) return;
      await sleep(250, signal);
    }
  };
  await allDelivered([...accepted].filter((i) => kindOf(i) === 'event').map(idOf), 60_000);
  const probe = byKind(requests.filter((q) => q.at < probeEnd));
  // Operations served (not those shed or timed out) per second.
  const maxRatePerS = served / ((Date.now() - probeStart) / 1000);
  const ratePerS = maxRatePerS / 2;
  say(
    `${name}: ${maxRatePerS.toFixed(0)} operations/s at most (${kindLine(probe)}); soaking at ${ratePerS.toFixed(0)}/s for ${MINUTES} min`,
  );

  // The soak: one operation every 1/rate s (started on time whatever the answers take), memory sampled every 5 s.
  const started = Date.now();
  const soakEnd = started + MINUTES * 60_000;
  const samples: SoakFigures['rssSamples'] = [];
  const sample = () => {
    const row: { atS: number } & Record<string, number> = { atS: (Date.now() - started) / 1000 } as {
      atS: number;
    } & Record<string, number>;
    for (const proc of env.stack.processes) row[procName(proc)] = Math.round(rssMb(proc.child.pid) * 10) / 10;
    row['load generator'] = Math.round((process.memoryUsage.rss() / 2 ** 20) * 10) / 10;
    samples.push(row);
  };
  const machine: SoakFigures['machineSamples'] = [];
  const loopDelay = monitorEventLoopDelay({ resolution: 20 });
  loopDelay.enable();
  let cpuBefore = machineTicks();
  const sampleMachine = () => {
    const now = machineTicks();
    const total = now.total - cpuBefore.total;
    const busy = now.busy - cpuBefore.busy;
    machine.push({
      atS: (Date.now() - started) / 1000,
      cpuBusyPct: total > 0 ? Math.round((100 * busy) / total) : 0,
      generatorLoopDelayMaxMs: Math.round(loopDelay.max / 1e6),
    });
    cpuBefore = now;
    loopDelay.reset();
  };
  sample();
  const sampler = setInterval(() => {
    sample();
    sampleMachine();
  }, 5000);
  // Each interval's figures as it ends, per kind of operation (which kind is slow shows while the soak runs).
  const every = (MINUTES * 60_000) / INTERVALS;
  const progress = setInterval(() => {
    const from = Date.now() - every;
    const m = machine.filter((x) => x.atS * 1000 >= from - started);
    say(
      `${name}: last ${(every / 1000).toFixed(0)} s: ${kindLine(byKind(requests.filter((q) => q.at >= from)))}; CPU busy up to ${Math.max(0, ...m.map((x) => x.cpuBusyPct))} %, the generator held up to ${Math.max(0, ...m.map((x) => x.generatorLoopDelayMaxMs))} ms`,
    );
  }, every);
  const inFlight = new Set<Promise<void>>();
  let notSent = 0;
  try {
    for (let k = 0; Date.now() < soakEnd && !signal.aborted; k++) {
      const due = started + (k * 1000) / ratePerS;
      const wait = due - Date.now();
      if (wait > 0) await sleep(wait, signal);
      if (inFlight.size >= MAX_IN_FLIGHT) {
        notSent++;
        continue;
      }
      const op = run(next++).finally(() => inFlight.delete(op));
      inFlight.add(op);
    }
    await Promise.all(inFlight);
  } finally {
    clearInterval(sampler);
    clearInterval(progress);
    sample();
    sampleMachine();
    loopDelay.disable();
  }
  const faultEnd = Date.now();

  // What was sent, read back: run events, deliveries, analytics events, feedback; then the delivery log and counters.
  const events = [...accepted].filter((i) => kindOf(i) === 'event');
  await allDelivered(events.map(idOf), DELIVERY_WAIT_MS);
  const found: string[] = [];
  /** Per project: the distinct run events and the analytics events stored. */
  const stored = new Map<SoakProject, { events: number; analytics: number }>();
  for (const sp of projects) {
    const scope = { tenantId: sp.p.tenantId, projectId: sp.p.projectId };
    const eventIds = (await readRows(env.stack.env.MONGO_URL!, 'events-ingest', 'runEvents', scope)).map(storedIdOf);
    found.push(...eventIds);
    for (const d of await readRows(env.stack.env.MONGO_URL!, 'management', 'feedback', scope))
      found.push(storedIdOf(d));
    const perBatch = new Map<string, number>();
    for (const id of await storedAnalyticsIds(env, sp.p, 'sa-')) {
      const batch = id.slice(0, id.lastIndexOf('-'));
      perBatch.set(batch, (perBatch.get(batch) ?? 0) + 1);
    }
    // A batch counts as stored once per full set of its events (a partial one is lost).
    for (const [batch, n] of perBatch) for (let k = 0; k < Math.floor(n / BATCH); k++) found.push(batch);
    stored.set(sp, {
      events: new Set(eventIds.filter((id) => id.startsWith('se-'))).size,
      analytics: [...perBatch.values()].reduce((a, b) => a + b, 0),
    });
  }
  const foundIds = new Set(found);

  // A stored event whose answer the client never got (a 504) is delivered too: waited for as well.
  await allDelivered(
    [...foundIds].filter((id) => id.startsWith('se-')),
    30_000,
  );
  const delivered = receiver.received
    .filter(ours)
    .map((x) => ({ eventId: x.json.data.event.id as string, webhookId: String(x.headers['webhook-id']) }));
  // Against what is stored: a write whose answer the client never got (a 504) may be stored, and then counts too.
  const storedEvents = [...stored.values()].reduce((a, b) => a + b.events, 0);
  const until = Date.now() + READ_BACK_MS;
  const checks: SoakFigures['checks'] = {
    'webhook deliveries received (distinct events)': {
      expected: storedEvents,
      found: new Set(delivered.map((d) => d.eventId)).size,
    },
    'delivery log: delivered': await countedAll(
      env,
      projects.map((sp) => ({
        path: `${projectPath(sp.p)}/webhook-destinations/${sp.destinationId}/deliveries?status=delivered&limit=1`,
        expected: stored.get(sp)!.events,
      })),
      (body) => body?.pagination?.total,
      until,
      signal,
    ),
    // The default range (the last 24 hours) holds the whole run.
    'analytics counts: total': await countedAll(
      env,
      projects.map((sp) => ({ path: `${projectPath(sp.p)}/analytics/counts`, expected: stored.get(sp)!.analytics })),
      (body) => body?.data?.total ?? body?.total,
      until,
      signal,
    ),
  };

  const r: LoadResult = { ...t, accepted, recoverMs: 'load ended first', faultAt: started, faultEnd, timings, answers };
  const row = rowOf(name, r, idOf, found);
  // Deliveries: an accepted event that never arrived is lost; one that arrived twice is a duplicate (marked when it
  // repeats a webhook-id: at least once).
  const got = new Set(delivered.map((d) => d.eventId));
  const undelivered = events.filter((i) => !got.has(idOf(i)));
  if (typeof row.lost === 'number') row.lost += undelivered.filter((i) => foundIds.has(idOf(i))).length;
  if (typeof row.duplicated === 'number') row.duplicated += delivered.length - got.size;
  row.redeliveries = delivered.length - new Set(delivered.map((d) => d.webhookId)).size;
  row.mismatches = Object.entries(checks)
    .filter(([, c]) => c.expected !== c.found)
    .map(([what, c]) => (c.found === null ? `${what}: ${c.readFailed}` : `${what}: ${c.found} of ${c.expected}`));

  const intervalMs = (faultEnd - started) / INTERVALS;
  const intervals: SoakFigures['intervals'] = Array.from({ length: INTERVALS }, (_, k) => {
    const from = started + k * intervalMs;
    const within = requests.filter((q) => q.at >= from && q.at < from + intervalMs);
    return {
      fromS: Math.round((k * intervalMs) / 1000),
      ops: within.length,
      p99Ms: p99Of(within.map((q) => q.ms)),
      byKind: byKind(within),
    };
  });
  const procs = Object.keys(samples[0] ?? {}).filter((k) => k !== 'atS');
  const rss: SoakFigures['rssMb'] = Object.fromEntries(
    procs.map((proc) => {
      const values = samples.map((s) => s[proc] ?? NaN).filter(Number.isFinite);
      return [proc, { start: values[0] ?? NaN, peak: Math.max(...values), end: values[values.length - 1] ?? NaN }];
    }),
  );
  row.soak = {
    minutes: MINUTES,
    maxRatePerS: Math.round(maxRatePerS),
    probe,
    ratePerS: Math.round(ratePerS),
    notSent,
    intervals,
    rssMb: rss,
    rssSamples: samples,
    machineSamples: machine,
    checks,
  };
  mkdirSync(join(repoRoot, 'docs', 'images'), { recursive: true });
  writeFileSync(
    SOAK_PNG,
    plotPng([
      {
        title: `Resident memory of every process (${MINUTES} min at ${Math.round(ratePerS)} operations/s)`,
        unit: 'MB',
        series: procs.map((proc) => ({
          name: proc,
          points: samples.map((s) => [s.atS, s[proc] ?? NaN] as [number, number]),
        })),
      },
      {
        title: 'p99 answer time per interval (all operations, and each kind)',
        unit: 'ms',
        series: [
          { name: 'all', p99: (i: (typeof intervals)[number]) => i.p99Ms },
          ...(['event', 'analytics', 'read', 'write'] as const).map((kind) => ({
            name: kind,
            p99: (i: (typeof intervals)[number]) => i.byKind[kind].p99Ms,
          })),
        ].map(({ name, p99 }) => ({
          name,
          points: intervals.filter((i) => p99(i) !== null).map((i) => [i.fromS, p99(i)!] as [number, number]),
        })),
      },
    ]),
  );
  say(`${name}: plot written to docs/images/soak.png`);
  return row;
}
