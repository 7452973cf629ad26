// Load generation: autocannon for closed-loop runs (fixed connections, each sends its next request when answered),
// an open-loop pacer of our own for paced runs; a warm-up, several runs, the median run reported.
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
// biome-ignore lint/style/noCommonJs: autocannon is a CommonJS package, loaded here with require
const autocannon = require('autocannon') as (opts: Record<string, unknown>) => Promise<AutocannonResult>;

interface Histogram {
  average: number;
  p50: number;
  p99: number;
}
interface AutocannonResult {
  requests: Histogram & { total: number };
  latency: Histogram;
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  '2xx': number;
  statusCodeStats?: Record<string, { count: number }>;
}

export interface LoadSpec {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  /** A fixed body, or a function giving each request its own body (unique ids; closed-loop runs only). */
  body?: string | (() => string);
  /** Each request's body in a paced run: this text with every `{{id}}` replaced by a new UUID. */
  template?: string;
  /** Filled by a paced run with `template`: each id's send time, wall clock in ms (performance.timeOrigin + now). */
  sentAt?: Map<string, number>;
  /** The same for the requests of the paced run's warm-up (not counted in its latencies). */
  warmSentAt?: Map<string, number>;
  connections?: number;
  /**
   * Requests per second, open loop: request i is due at i / rate s from the start and is sent then on a free connection
   * (or waits for one); its latency counts from when it was due. Unset = as fast as the connections go (closed loop).
   */
  rate?: number;
  /** Status every answer must have (others are counted as errors and reported). */
  expectStatus?: number;
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** Answers with another status than expected. */
  unexpected: number;
  runs: number;
  /** Answers with the expected status in the reported run. */
  completed?: number;
  /** Throughput of every run, in order (the log shows them beside the median). */
  runRates?: number[];
  /** Answers with the expected status over every run (the warm-up left out). */
  completedAll?: number;
  /** A paced run: the pacer thread's own event-loop delay and GC pauses in the reported run. */
  loader?: string;
  /** Paced runs: how many errors and unexpected answers of each kind (`status 503`, `ECONNRESET`, `timeout`), over every run. */
  errorKinds?: Record<string, number>;
}

export interface LoadSettings {
  durationS: number;
  warmupS: number;
  runs: number;
  connections: number;
}

/** One run's outcome, whichever generator made it. */
interface RunResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  unexpected: number;
  completed: number;
  errorKinds?: Record<string, number>;
  /** A paced run: the pacer thread's own event-loop delay and GC pauses. */
  loader?: string;
  /** A paced run: every counted request's latency (ms). */
  latencies?: Float64Array;
}

const round1 = (x: number) => Math.round(x * 10) / 10;

/**
 * Paced, open-loop: autocannon's `overallRate` lets each connection send its share of a second back to back and then
 * wait for the next second, so "100/s" arrives as a burst at the start of each second (at 50 connections, full load
 * for part of the second and none for the rest). Here requests are due evenly; a request that finds every connection
 * busy waits for one, and that wait is part of its latency. The pacer runs in a worker thread (paced-worker.mjs):
 * the bench process's own garbage collection paused it for up to 36 ms during a paced row, time that was counted as
 * the stack's latency.
 */
async function paced(spec: LoadSpec, durationS: number, connections: number, warmupS: number): Promise<RunResult> {
  if (typeof spec.body === 'function')
    throw new Error("a paced run takes a body text or a template (bodies are made in the pacer's thread)");
  // BENCH_SLOW_LOG=<file>: the due time (wall clock), latency and send delay of every paced request of BENCH_SLOW_MS
  // (50) or more, and the pacer's own event-loop delay and GC pauses, to line them up with the stack's logs.
  const slowLog = process.env.BENCH_SLOW_LOG;
  const workerData = {
    url: spec.url,
    method: spec.method ?? 'GET',
    headers: spec.headers ?? {},
    body: typeof spec.body === 'string' ? spec.body : undefined,
    template: spec.template,
    rate: spec.rate,
    warmupS,
    durationS,
    connections,
    expectStatus: spec.expectStatus ?? 200,
    slowMs: slowLog ? Number(process.env.BENCH_SLOW_MS ?? 50) : undefined,
    recordIds: spec.sentAt !== undefined,
  };
  const worker = new Worker(join(__dirname, 'paced-worker.mjs'), { workerData });
  const out = await new Promise<PacedOutcome>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the pacer's thread exited (${code}) before it answered`)));
  });
  await worker.terminate();
  for (const [id, at] of out.sentAt ?? []) spec.sentAt!.set(id, at);
  for (const [id, at] of out.warmSentAt ?? []) spec.warmSentAt?.set(id, at);
  if (slowLog) appendFileSync(slowLog, `${[...out.slow, `# ${out.loader}`].join('\n')}\n`);
  const p = percentiles([...out.latencies]);
  return {
    rps: out.completed / Math.max(durationS, out.tookS),
    p50: round1(p.p50),
    p99: round1(p.p99),
    errors: out.errors,
    unexpected: out.unexpected,
    errorKinds: out.kinds,
    completed: out.completed,
    loader: out.loader,
    latencies: out.latencies,
  };
}

/** What the pacer's thread posts back (paced-worker.mjs). */
interface PacedOutcome {
  latencies: Float64Array;
  completed: number;
  errors: number;
  unexpected: number;
  kinds?: Record<string, number>;
  tookS: number;
  slow: string[];
  sentAt?: Array<[string, number]>;
  warmSentAt?: Array<[string, number]>;
  loader: string;
}

async function once(spec: LoadSpec, durationS: number, connections: number, pacedWarmupS = 0): Promise<RunResult> {
  if (spec.rate) return paced(spec, durationS, connections, pacedWarmupS);
  const body = spec.body;
  const opts: Record<string, unknown> = {
    url: spec.url,
    method: spec.method ?? 'GET',
    headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...(spec.headers ?? {}) },
    connections,
    duration: durationS,
    pipelining: 1,
    timeout: 20,
  };
  if (typeof body === 'function')
    opts.requests = [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, body: body() }) }];
  else if (body !== undefined) opts.body = body;
  const r = await autocannon(opts);
  const expected = spec.expectStatus ?? 200;
  let unexpected = 0;
  let completed = 0;
  for (const [code, s] of Object.entries(r.statusCodeStats ?? {})) {
    if (Number(code) !== expected) unexpected += s.count;
    else completed += s.count;
  }
  return {
    rps: r.requests.total / r.duration,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.timeouts,
    unexpected,
    completed,
  };
}

/** The middle value (the upper one of an even count). */
export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

/**
 * Warm-up, then `runs` runs; the run with the median throughput is reported (its own p50 and p99). A paced row's runs
 * all have the rate they were given, so its percentiles are those of every request of every run: the median-rate run
 * of a paced row would be whichever run happened to finish a few requests sooner.
 */
export async function measure(spec: LoadSpec, settings: LoadSettings, around?: { start(): void }): Promise<LoadResult> {
  const connections = spec.connections ?? settings.connections;
  // A paced run's warm-up is its pacer's own first seconds, in each run (every run is a new thread: see paced-worker.mjs).
  if (settings.warmupS > 0 && !spec.rate) await once(spec, settings.warmupS, connections);
  around?.start();
  const results: RunResult[] = [];
  for (let i = 0; i < settings.runs; i++)
    results.push(await once(spec, settings.durationS, connections, settings.warmupS));
  const m = median(results.map((r) => r.rps));
  const chosen = results.find((r) => r.rps === m)!;
  const pooled = spec.rate ? percentiles(results.flatMap((r) => [...(r.latencies ?? [])])) : undefined;
  return {
    rps: m,
    p50: pooled ? round1(pooled.p50) : chosen.p50,
    p99: pooled ? round1(pooled.p99) : chosen.p99,
    errors: results.reduce((n, r) => n + r.errors, 0),
    unexpected: results.reduce((n, r) => n + r.unexpected, 0),
    errorKinds: sumKinds(results.map((r) => r.errorKinds)),
    runs: settings.runs,
    completed: chosen.completed,
    runRates: results.map((r) => r.rps),
    completedAll: results.reduce((n, r) => n + r.completed, 0),
    loader: chosen.loader,
  };
}

/** The error kinds of several runs added up; undefined when there were none. */
function sumKinds(all: Array<Record<string, number> | undefined>): Record<string, number> | undefined {
  const out: Record<string, number> = {};
  for (const kinds of all) for (const [k, n] of Object.entries(kinds ?? {})) out[k] = (out[k] ?? 0) + n;
  return Object.keys(out).length ? out : undefined;
}

/** Latency percentiles of plain numbers (ms). */
export function percentiles(xs: number[]): { p50: number; p99: number; max: number } {
  if (!xs.length) return { p50: NaN, p99: NaN, max: NaN };
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  return { p50: at(0.5), p99: at(0.99), max: s[s.length - 1]! };
}
