// A day in ten minutes: a bounded soak of mixed traffic (run events with a webhook, analytics batches, management
// reads and writes) at half the rate the stack reached in a short closed-loop probe, for --soak-minutes (default 10).
// The resident memory of every process and the p99 per interval go in the JSON and in a plot (docs/images/soak.png);
// afterwards every accepted write is read back, every accepted event must have reached the webhook receiver, and the
// delivery log and the analytics counters must count what was accepted.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { anAnalyticsKey, anApiKey, aProject, projectPath, repoRoot, type Receiver } from '@platform/testkit';
import { rssMb } from '../../bench/processes';
import { get, type LoadResult, post, tally, type Tally } from '../load';
import { plotPng } from '../plot';
import { readRows, rowOf, storedIdOf } from '../readback';
import { bounded, failedRow, fault, type Row } from '../report';
import { arg, BOUND, DELIVERY_WAIT_MS, say, sleep, want, WRITE_DEADLINE_MS } from '../run';
import { type Env, newStack, stopStack } from '../stacks';
import { storedAnalyticsIds } from '../workloads';

const MINUTES = Number(arg('soak-minutes') ?? 10);
const name = `a day in ${MINUTES} minutes (mixed traffic at half the measured max rate)`;
/** The closed-loop probe of the maximum rate. */
const PROBE_MS = 15_000;
const PROBE_WORKERS = 32;
/** Operations of the paced load in flight at most (beyond, the generator itself is behind: counted, not sent). */
const MAX_IN_FLIGHT = 512;
const BATCH = 10;
const INTERVALS = 20;
export const SOAK_PNG = join(repoRoot, 'docs', 'images', 'soak.png');

type Kind = 'event' | 'analytics' | 'read' | 'write';
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
/** The id a write stores (an analytics batch: its events' ids start with it). */
const idOf = (i: number) => `s${kindOf(i)[0]}-${i}`;

export interface SoakFigures {
  minutes: number;
  maxRatePerS: number;
  ratePerS: number;
  /** Operations the generator could not start (over its own bound of operations in flight). */
  notSent: number;
  intervals: Array<{ fromS: number; ops: number; p99Ms: number | null }>;
  rssMb: Record<string, { start: number; peak: number; end: number }>;
  rssSamples: Array<{ atS: number } & Record<string, number>>;
  checks: Record<string, { expected: number; found: number }>;
}

export async function soakRows(receiver: Receiver): Promise<void> {
  if (!want(name)) return;
  let env: Env | undefined;
  try {
    env = await bounded('start the soak stack', BOUND.stackStart, () =>
      newStack('soak', ['management', 'run-auth', 'events-ingest', 'analytics', 'webhook-dispatcher']),
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
  }
}

async function soak(env: Env, receiver: Receiver, signal: AbortSignal): Promise<Row> {
  const p = aProject();
  const gw = env.stack.gatewayUrl;
  const { key } = await anApiKey(env.admin, p);
  const { key: analyticsKey } = await anAnalyticsKey(env.admin, p);
  const dest = await env.admin.post(`${projectPath(p)}/webhook-destinations`, {
    name: 'soak',
    url: receiver.url,
    eventTypes: ['event.created'],
  });
  if (dest.status !== 201) throw new Error(`creating the webhook destination: ${dest.status}`);
  const destinationId = dest.body.data.id as string;
  const feedback = `${gw}${projectPath(p)}/feedback`;
  const send = (i: number): Promise<number> => {
    switch (kindOf(i)) {
      case 'event':
        return post(`${gw}/run/v1/events`, key, { id: idOf(i), type: 'soak.tested', conversationId: `c-${i % 50}` });
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
        return post(feedback, env.adminToken, { id: idOf(i), conversationId: `c-${i % 50}`, type: 'positive' });
      case 'read':
        return get(`${feedback}?limit=10`, env.adminToken);
    }
  };
  const t: Tally = { sent: 0, fivexx: 0, fivexxSafe: 0, fivexxNotSafe: 0, failed: 0, errors: {} };
  const accepted = new Set<number>();
  const answers = new Map<number, number[]>();
  const timings: Array<[number, number]> = [];
  let served = 0;
  /** One operation: a write is sent again (same id) until accepted or past its deadline; a read once. */
  const run = async (i: number) => {
    const deadline = Date.now() + WRITE_DEADLINE_MS;
    for (let attempt = 0; ; attempt++) {
      const startedAt = Date.now();
      const status = await send(i);
      timings.push([startedAt, Date.now() - startedAt]);
      // Every operation here is safe to repeat (events, batches and feedback with ids; reads).
      tally(t, status, true);
      answers.set(i, [...(answers.get(i) ?? []), status]);
      const ok = (status >= 200 && status < 300) || status === 409;
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
  const ours = (x: { json?: any }) => x.json?.tenantId === p.tenantId;
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
  // Operations served (not those shed or timed out) per second.
  const maxRatePerS = served / ((Date.now() - probeStart) / 1000);
  const ratePerS = maxRatePerS / 2;
  say(
    `${name}: ${maxRatePerS.toFixed(0)} operations/s at most; soaking at ${ratePerS.toFixed(0)}/s for ${MINUTES} min`,
  );

  // The soak: one operation every 1/rate s (started on time whatever the answers take), memory sampled every 5 s.
  const started = Date.now();
  const soakEnd = started + MINUTES * 60_000;
  const samples: SoakFigures['rssSamples'] = [];
  const sample = () => {
    const row: { atS: number } & Record<string, number> = { atS: (Date.now() - started) / 1000 } as {
      atS: number;
    } & Record<string, number>;
    for (const proc of env.stack.processes)
      row[proc.index ? `${proc.name}#${proc.index + 1}` : proc.name] = Math.round(rssMb(proc.child.pid) * 10) / 10;
    row['load generator'] = Math.round((process.memoryUsage.rss() / 2 ** 20) * 10) / 10;
    samples.push(row);
  };
  sample();
  const sampler = setInterval(sample, 5000);
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
    sample();
  }
  const faultEnd = Date.now();

  // What was sent, read back: run events, deliveries, analytics events, feedback; then the delivery log and counters.
  const events = [...accepted].filter((i) => kindOf(i) === 'event');
  await allDelivered(events.map(idOf), DELIVERY_WAIT_MS);
  await sleep(2000, signal);
  const scope = { tenantId: p.tenantId, projectId: p.projectId };
  const found: string[] = [];
  for (const d of await readRows(env.stack.env.MONGO_URL!, 'events-ingest', 'runEvents', scope))
    found.push(storedIdOf(d));
  for (const d of await readRows(env.stack.env.MONGO_URL!, 'management', 'feedback', scope)) found.push(storedIdOf(d));
  const perBatch = new Map<string, number>();
  for (const id of await storedAnalyticsIds(env, p, 'sa-')) {
    const batch = id.slice(0, id.lastIndexOf('-'));
    perBatch.set(batch, (perBatch.get(batch) ?? 0) + 1);
  }
  // A batch counts as stored once per full set of its events (a partial one is lost).
  for (const [batch, n] of perBatch) for (let k = 0; k < Math.floor(n / BATCH); k++) found.push(batch);

  const delivered = receiver.received
    .filter(ours)
    .map((x) => ({ eventId: x.json.data.event.id as string, webhookId: String(x.headers['webhook-id']) }));
  // Read until answered 200 (the stack may still be busy with the end of the load).
  const read = async (path: string) => {
    for (let tries = 0; ; tries++) {
      const res = await env.admin.get(path);
      if (res.status === 200 || tries >= 30 || signal.aborted) return res;
      await sleep(1000, signal);
    }
  };
  const log = await read(`${projectPath(p)}/webhook-destinations/${destinationId}/deliveries?status=delivered&limit=1`);
  // The default range (the last 24 hours) holds the whole run.
  const counts = await read(`${projectPath(p)}/analytics/counts`);
  // Against what is stored: a write whose answer the client never got (a 504) may be stored, and then counts too.
  const storedEvents = new Set(found.filter((id) => id.startsWith('se-'))).size;
  const storedAnalytics = [...perBatch.values()].reduce((a, b) => a + b, 0);
  const checks: SoakFigures['checks'] = {
    'webhook deliveries received (distinct events)': {
      expected: storedEvents,
      found: new Set(delivered.map((d) => d.eventId)).size,
    },
    'delivery log: delivered': { expected: storedEvents, found: Number(log.body?.pagination?.total ?? -1) },
    'analytics counts: total': {
      expected: storedAnalytics,
      found: Number(counts.body?.data?.total ?? counts.body?.total ?? -1),
    },
  };
  if (log.status !== 200 || counts.status !== 200)
    say(
      `${name}: delivery log ${log.status}, analytics counts ${counts.status} ${JSON.stringify(counts.body).slice(0, 300)}`,
    );

  const r: LoadResult = { ...t, accepted, recoverMs: 'load ended first', faultAt: started, faultEnd, timings, answers };
  const row = rowOf(name, r, idOf, found);
  // Deliveries: an accepted event that never arrived is lost; one that arrived twice is a duplicate (marked when it
  // repeats a webhook-id: at least once).
  const got = new Set(delivered.map((d) => d.eventId));
  const undelivered = events.filter((i) => !got.has(idOf(i)));
  if (typeof row.lost === 'number') row.lost += undelivered.filter((i) => found.includes(idOf(i))).length;
  if (typeof row.duplicated === 'number') row.duplicated += delivered.length - got.size;
  row.redeliveries = delivered.length - new Set(delivered.map((d) => d.webhookId)).size;
  row.mismatches = Object.entries(checks)
    .filter(([, c]) => c.expected !== c.found)
    .map(([what, c]) => `${what}: ${c.found} of ${c.expected}`);

  const intervalMs = (faultEnd - started) / INTERVALS;
  const intervals: SoakFigures['intervals'] = Array.from({ length: INTERVALS }, (_, k) => {
    const from = started + k * intervalMs;
    const ms = timings
      .filter(([at]) => at >= from && at < from + intervalMs)
      .map(([, d]) => d)
      .sort((a, b) => a - b);
    return {
      fromS: Math.round((k * intervalMs) / 1000),
      ops: ms.length,
      p99Ms: ms.length ? ms[Math.min(ms.length - 1, Math.floor(ms.length * 0.99))]! : null,
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
    ratePerS: Math.round(ratePerS),
    notSent,
    intervals,
    rssMb: rss,
    rssSamples: samples,
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
        title: 'p99 answer time per interval (all operations)',
        unit: 'ms',
        series: [
          {
            name: 'p99',
            points: intervals.filter((i) => i.p99Ms !== null).map((i) => [i.fromS, i.p99Ms!] as [number, number]),
          },
        ],
      },
    ]),
  );
  say(`${name}: plot written to docs/images/soak.png`);
  return row;
}
