// Load generation with autocannon: fixed connections, a warm-up, several runs, the median run reported.
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
  /** Requests per second over all connections (open-loop pacing); unset = as fast as possible. */
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
}

export interface LoadSettings {
  durationS: number;
  warmupS: number;
  runs: number;
  connections: number;
}

async function once(spec: LoadSpec, durationS: number, connections: number): Promise<AutocannonResult & { unexpected: number; completed: number }> {
  const body = spec.body;
  const opts: Record<string, unknown> = {
    url: spec.url,
    method: spec.method ?? 'GET',
    headers: { ...(body ? { 'content-type': 'application/json' } : {}), ...(spec.headers ?? {}) },
    connections,
    duration: durationS,
    pipelining: 1,
    timeout: 20,
    ...(spec.rate ? { overallRate: spec.rate } : {}),
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
  return { ...r, unexpected, completed };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
};

/** Warm-up, then `runs` runs; the run with the median throughput is reported (its own p50 and p99). */
export async function measure(spec: LoadSpec, settings: LoadSettings): Promise<LoadResult> {
  const connections = spec.connections ?? settings.connections;
  if (settings.warmupS > 0) await once(spec, settings.warmupS, connections);
  const results: Array<AutocannonResult & { unexpected: number; completed: number }> = [];
  for (let i = 0; i < settings.runs; i++) results.push(await once(spec, settings.durationS, connections));
  const rpsOf = (r: AutocannonResult) => r.requests.total / r.duration;
  const m = median(results.map(rpsOf));
  const chosen = results.find((r) => rpsOf(r) === m)!;
  return {
    rps: m,
    p50: chosen.latency.p50,
    p99: chosen.latency.p99,
    errors: results.reduce((n, r) => n + r.errors + r.timeouts, 0),
    unexpected: results.reduce((n, r) => n + r.unexpected, 0),
    runs: settings.runs,
    completed: chosen.completed,
  };
}

/** Latency percentiles of plain numbers (ms). */
export function percentiles(xs: number[]): { p50: number; p99: number; max: number } {
  if (!xs.length) return { p50: NaN, p99: NaN, max: NaN };
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  return { p50: at(0.5), p99: at(0.99), max: s[s.length - 1]! };
}
