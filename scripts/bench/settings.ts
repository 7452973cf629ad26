// What a bench run measures and for how long, read once from the environment (docs/performance.md, "Running it"):
// BENCH_DURATION (s per run, 10), BENCH_WARMUP (s, 3), BENCH_RUNS (3), BENCH_CONNECTIONS (50),
// BENCH_LAG_SECONDS (10), BENCH_GROWTH (project sizes, "1000,10000,100000"),
// BENCH_QUICK=1 (1 s runs, 1 run, 1 s warm-up, growth 1000: checks that everything works), BENCH_PROFILE=1 (only the
// event write path, with --cpu-prof on the gateway, events-ingest and the dispatcher; prints their top frames),
// BENCH_KEEP_DATA=1, BENCH_WRITE_GROWTH (events and deliveries stored before the write-growth row, 100000; quick 2000),
// BENCH_GROWTH_LAG_SECONDS (length of each of the write-growth rows' paced lag runs, 30; quick 3),
// BENCH_GROWTH_LAG_RUNS (rounds of lag runs on the write-growth rows' two stacks, in turn, 5; quick 1),
// BENCH_GROWTH_RATE_RUNS (rounds of rate runs on the same two stacks, 5; quick 1),
// BENCH_WEBHOOK_STEPS (paced rates of the webhook search, "100,200,300,400,600,800,1000"; quick "100,300"),
// BENCH_SECTIONS (which parts run, default all of DEFAULT_SECTIONS; the rows read against a ceiling need `ceiling` in
// the same run to show their fraction; `drift`, not in the default, runs B alone BENCH_DRIFT_RUNS times, 18, to show
// how the machine's speed moves; `ab`, not in the default, compares new events on two stacks, the second with the
// settings of BENCH_AB_ENV (JSON) and the node flags of BENCH_AB_NODE_ARGS (JSON, by service), in BENCH_AB_ROUNDS
// rounds, 5), BENCH_IDLE_WAIT_MS (wait after start before the idle RSS sample, 2000), BENCH_DUMP_METRICS=1 (every
// process's /metrics before and after the half-max row), BENCH_SLOW_LOG=<file> (every paced request of BENCH_SLOW_MS,
// 50, or more: its due time and latency; see load.ts), BENCH_NODE_OPTIONS and BENCH_STACK_ENV (override the production
// image's node flags and add settings to every service), BENCH_LOG_LEVEL (the services', warn).
import type { LoadSettings } from './load';

export const DEFAULT_SECTIONS = [
  'core',
  'ceiling',
  'manage',
  'lag',
  'events',
  'analytics',
  'replicas',
  'webhookmax',
  'writegrowth',
  'growth',
];

export interface BenchSettings {
  quick: boolean;
  /** The closed-loop runs of every row. */
  load: LoadSettings;
  /** BENCH_PROFILE=1 (or `events`): the event write path, gateway, events-ingest and webhook-dispatcher; `list`: the
   * API key list at 10 connections, gateway and management. */
  profile?: 'events' | 'list';
  profiledServices: string[];
  /** BENCH_PROFILE_RATE=<n>: the profiled new events paced at n a second, else a closed loop. */
  profileRate: number;
  sections: Set<string>;
  lagSeconds: number;
  /**
   * The growth rows compare two p99s within 10 %: 3,000 deliveries a run (of 1,000, the 10th slowest is the p99, which
   * moves by a tenth between runs of the same code), several runs a side taken in turn with the other side's, and
   * each side's p99 read over every delivery of its runs (15,000: one slow moment is a few of its slowest 150).
   */
  growthLagSeconds: number;
  growthLagRuns: number;
  /** Rounds of one rate run on each write-growth stack: five, so that the median does not turn on a single round. */
  growthRateRounds: number;
  growthSizes: number[];
  writeGrowthSize: number;
  webhookSteps: number[];
  driftRuns: number;
  ab: { env: Record<string, string>; nodeArgs: Record<string, string[]>; rounds: number };
  keepData: boolean;
  idleWaitMs: number;
  dumpMetrics: boolean;
  /** BENCH_NODE_OPTIONS: node flags for every service instead of the production image's. */
  nodeOptions?: string;
  /** BENCH_STACK_ENV: settings of every service as JSON, for trying one out (`{"RATE_LIMIT_ENABLED":"false"}`). */
  stackEnv: Record<string, string>;
  logLevel: string;
}

const numbers = (list: string) =>
  list
    .split(',')
    .map(Number)
    .filter((n) => n > 0);

export function readSettings(env: NodeJS.ProcessEnv = process.env): BenchSettings {
  const quick = env.BENCH_QUICK === '1';
  const profile =
    env.BENCH_PROFILE === 'list'
      ? 'list'
      : env.BENCH_PROFILE === '1' || env.BENCH_PROFILE === 'events'
        ? 'events'
        : undefined;
  return {
    quick,
    load: {
      durationS: Number(env.BENCH_DURATION ?? (quick ? 1 : 10)),
      warmupS: Number(env.BENCH_WARMUP ?? (quick ? 1 : 3)),
      runs: Number(env.BENCH_RUNS ?? (quick ? 1 : 3)),
      connections: Number(env.BENCH_CONNECTIONS ?? 50),
    },
    profile,
    profiledServices:
      profile === 'list' ? ['gateway', 'management'] : ['gateway', 'events-ingest', 'webhook-dispatcher'],
    profileRate: Number(env.BENCH_PROFILE_RATE ?? 0),
    sections: new Set((env.BENCH_SECTIONS ?? DEFAULT_SECTIONS.join(',')).split(',').map((x) => x.trim())),
    lagSeconds: Number(env.BENCH_LAG_SECONDS ?? (quick ? 3 : 10)),
    growthLagSeconds: Number(env.BENCH_GROWTH_LAG_SECONDS ?? (quick ? 3 : 30)),
    growthLagRuns: Math.max(1, Number(env.BENCH_GROWTH_LAG_RUNS ?? (quick ? 1 : 5))),
    growthRateRounds: Math.max(1, Number(env.BENCH_GROWTH_RATE_RUNS ?? (quick ? 1 : 5))),
    growthSizes: numbers(env.BENCH_GROWTH ?? (quick ? '1000' : '1000,10000,100000')).sort((a, b) => a - b),
    writeGrowthSize: Number(env.BENCH_WRITE_GROWTH ?? (quick ? 2000 : 100_000)),
    webhookSteps: numbers(env.BENCH_WEBHOOK_STEPS ?? (quick ? '100,300' : '100,200,300,400,600,800,1000')),
    driftRuns: Number(env.BENCH_DRIFT_RUNS ?? 18),
    ab: {
      env: JSON.parse(env.BENCH_AB_ENV ?? '{}') as Record<string, string>,
      nodeArgs: JSON.parse(env.BENCH_AB_NODE_ARGS ?? '{}') as Record<string, string[]>,
      rounds: Math.max(1, Number(env.BENCH_AB_ROUNDS ?? (quick ? 1 : 5))),
    },
    keepData: env.BENCH_KEEP_DATA === '1',
    idleWaitMs: Number(env.BENCH_IDLE_WAIT_MS ?? 2000),
    dumpMetrics: env.BENCH_DUMP_METRICS === '1',
    nodeOptions: env.BENCH_NODE_OPTIONS,
    stackEnv: env.BENCH_STACK_ENV ? (JSON.parse(env.BENCH_STACK_ENV) as Record<string, string>) : {},
    logLevel: env.BENCH_LOG_LEVEL ?? 'warn',
  };
}
