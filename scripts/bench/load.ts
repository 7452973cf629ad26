// Load generation: autocannon for closed-loop runs (fixed connections, each sends its next request when answered),
// an open-loop pacer of our own for paced runs; a warm-up, several runs, the median run reported.
import { appendFileSync } from 'node:fs';
import http from 'node:http';
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
  /** A fixed body, or a function giving each request its own body (unique ids). */
  body?: string | (() => string);
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
}

/**
 * Paced, open-loop: autocannon's `overallRate` lets each connection send its share of a second back to back and then
 * wait for the next second, so "100/s" arrives as a burst at the start of each second (at 50 connections, full load
 * for part of the second and none for the rest). Here requests are due evenly; a request that finds every connection
 * busy waits for one, and that wait is part of its latency.
 */
async function paced(spec: LoadSpec, durationS: number, connections: number): Promise<RunResult> {
  // BENCH_SLOW_LOG=<file>: the due time (wall clock) and latency of every paced request of BENCH_SLOW_MS (50) or more,
  // to line them up with the logs of the stack and the database.
  const slowLog = process.env.BENCH_SLOW_LOG ? { path: process.env.BENCH_SLOW_LOG, ms: Number(process.env.BENCH_SLOW_MS ?? 50), lines: [] as string[] } : undefined;
  const url = new URL(spec.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const expected = spec.expectStatus ?? 200;
  const interval = 1000 / spec.rate!;
  const latencies: number[] = [];
  const outcome = { errors: 0, unexpected: 0, completed: 0 };
  const answers: Array<Promise<void>> = [];
  const send = (due: number) =>
    new Promise<void>((resolve) => {
      const body = typeof spec.body === 'function' ? spec.body() : spec.body;
      const headers: Record<string, string | number> = { ...(spec.headers ?? {}) };
      if (body !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      const req = http.request({ agent, host: url.hostname, port: url.port, path: url.pathname + url.search, method: spec.method ?? 'GET', headers, timeout: 20_000 }, (res) => {
        res.resume();
        res.on('end', () => {
          const took = performance.now() - due;
          latencies.push(took);
          if (slowLog && took >= slowLog.ms) slowLog.lines.push(`${new Date(performance.timeOrigin + due).toISOString()} ${took.toFixed(1)} ${spec.url} ${spec.rate}/s`);
          if (res.statusCode === expected) outcome.completed++;
          else outcome.unexpected++;
          resolve();
        });
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', () => {
        outcome.errors++;
        resolve();
      });
      req.end(body);
    });
  const start = performance.now();
  const total = Math.floor(durationS * spec.rate!);
  await new Promise<void>((done) => {
    let sent = 0;
    const tick = () => {
      const now = performance.now();
      for (; sent < total && start + sent * interval <= now; sent++) answers.push(send(start + sent * interval));
      if (sent >= total) return done();
      setTimeout(tick, Math.max(0, start + sent * interval - performance.now()));
    };
    tick();
  });
  await Promise.all(answers);
  if (slowLog?.lines.length) appendFileSync(slowLog.path, `${slowLog.lines.join('\n')}\n`);
  const took = (performance.now() - start) / 1000;
  agent.destroy();
  const p = percentiles(latencies);
  const round = (x: number) => Math.round(x * 10) / 10;
  return { rps: outcome.completed / Math.max(durationS, took), p50: round(p.p50), p99: round(p.p99), ...outcome };
}

async function once(spec: LoadSpec, durationS: number, connections: number): Promise<RunResult> {
  if (spec.rate) return paced(spec, durationS, connections);
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
  if (typeof body === 'function') opts.requests = [{ setupRequest: (req: Record<string, unknown>) => ({ ...req, body: body() }) }];
  else if (body !== undefined) opts.body = body;
  const r = await autocannon(opts);
  const expected = spec.expectStatus ?? 200;
  let unexpected = 0;
  let completed = 0;
  for (const [code, s] of Object.entries(r.statusCodeStats ?? {})) {
    if (Number(code) !== expected) unexpected += s.count;
    else completed += s.count;
  }
  return { rps: r.requests.total / r.duration, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.timeouts, unexpected, completed };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

/** Warm-up, then `runs` runs; the run with the median throughput is reported (its own p50 and p99). */
export async function measure(spec: LoadSpec, settings: LoadSettings, around?: { start(): void }): Promise<LoadResult> {
  const connections = spec.connections ?? settings.connections;
  if (settings.warmupS > 0) await once(spec, settings.warmupS, connections);
  around?.start();
  const results: RunResult[] = [];
  for (let i = 0; i < settings.runs; i++) results.push(await once(spec, settings.durationS, connections));
  const m = median(results.map((r) => r.rps));
  const chosen = results.find((r) => r.rps === m)!;
  return {
    rps: m,
    p50: chosen.p50,
    p99: chosen.p99,
    errors: results.reduce((n, r) => n + r.errors, 0),
    unexpected: results.reduce((n, r) => n + r.unexpected, 0),
    runs: settings.runs,
    completed: chosen.completed,
    runRates: results.map((r) => r.rps),
    completedAll: results.reduce((n, r) => n + r.completed, 0),
  };
}

/** Latency percentiles of plain numbers (ms). */
export function percentiles(xs: number[]): { p50: number; p99: number; max: number } {
  if (!xs.length) return { p50: NaN, p99: NaN, max: NaN };
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  return { p50: at(0.5), p99: at(0.99), max: s[s.length - 1]! };
}
