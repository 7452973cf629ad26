// pnpm bench: every hot path of the platform measured beside a bare node:http server (B) in one run. What it measures
// and how to run it: docs/performance.md; its settings: settings.ts; each section of rows: rows/<section>.ts.
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  client,
  dropDatabases,
  ensureInfra,
  freePort,
  localSecrets,
  reapOrphans,
  type InfraEnv,
} from '@platform/testkit';
import { eventFixtures, type Bench, type BenchContext } from './context';
import { cpuBetween, cpuSnapshot } from './cpu';
import { sleep } from './helpers';
import { MemoryWatch, memoryFloor } from './processes';
import { topFrames } from './profile';
import { report, results } from './report';
import { dbPrefix, log, logDir, profDir, runId, runsDir } from './run';
import { readSettings, type BenchSettings } from './settings';
import { benchStacks, productionNodeArgs, productionProcessEnv, startBaseline } from './stacks';
import { Table } from './table';
import {
  atTeardown,
  forgetRun,
  interrupted,
  recordRun,
  sweepEarlierRuns,
  teardown,
  teardownOnSignals,
} from './teardown';
import { abRows } from './rows/ab';
import { analyticsRows } from './rows/analytics';
import { baselineRow } from './rows/baseline';
import { ceilingRows } from './rows/ceiling';
import { coreRows } from './rows/core';
import { driftRows } from './rows/drift';
import { eventRows } from './rows/events';
import { growthRows } from './rows/growth';
import { lagRows } from './rows/lag';
import { manageRows } from './rows/manage';
import { profileRows } from './rows/profile';
import { replicaRows } from './rows/replicas';
import { webhookMaxRow } from './rows/webhookmax';
import { writeGrowthRows } from './rows/writegrowth';

async function main() {
  const settings = readSettings();
  const infra = await prepareRun(settings);
  const bench = await startBench(settings, infra);
  const startedAt = new Date();
  const runCpu = cpuSnapshot();
  try {
    await sleep(settings.idleWaitMs);
    bench.memory.sampleIdle(bench.stack);
    const ctx: BenchContext = { ...bench, events: await eventFixtures(bench) };
    if (settings.profile) await profileRows(ctx);
    else await measureRows(ctx);
  } finally {
    await finish(bench, startedAt, runCpu);
  }
}

/** The sections in the order they run; each measures what BENCH_SECTIONS asks for (all but drift and ab by default). */
async function measureRows(ctx: BenchContext) {
  const has = (section: string) => ctx.settings.sections.has(section);
  await baselineRow(ctx);
  if (has('drift')) await driftRows(ctx);
  if (has('ceiling')) await ceilingRows(ctx);
  await ctx.memory.underLoad(ctx.stack, async () => {
    if (has('core')) await coreRows(ctx);
    if (has('manage')) await manageRows(ctx);
    // Before the throughput rows, so the dispatcher has no backlog from them.
    if (has('lag')) await lagRows(ctx);
    if (has('events') || has('replicas')) await eventRows(ctx);
    if (has('analytics')) await analyticsRows(ctx);
    if (has('replicas')) await replicaRows(ctx);
  });
  if (has('webhookmax')) await webhookMaxRow(ctx);
  if (has('ab')) await abRows(ctx);
  if (has('writegrowth')) await writeGrowthRows(ctx);
  if (has('growth')) await growthRows(ctx);
}

/**
 * What the run needs before it starts anything: the infrastructure, and the clearing of what this run will leave
 * behind (on Ctrl-C and SIGTERM too) and of what earlier runs killed outright left behind.
 */
async function prepareRun(settings: BenchSettings): Promise<InfraEnv> {
  mkdirSync(logDir, { recursive: true });
  const infra = ensureInfra();
  // Ctrl-C and SIGTERM stop what this run started (every start below registers its undoing with atTeardown).
  teardownOnSignals(log);
  // What earlier runs killed outright left behind: their processes (and NATS stores), then their databases.
  const reaped = reapOrphans();
  if (reaped) log(`stopped ${reaped} process(es) left behind by earlier runs`);
  const swept = await sweepEarlierRuns(runsDir, infra.MONGO_URL);
  if (swept.length)
    log(
      `dropped the databases of ${swept.length} earlier run(s) that ended without dropping them: ${swept.join(', ')}`,
    );
  recordRun(runsDir, runId, { pid: process.pid, dbPrefix, keep: settings.keepData });
  // Last of all: each stack drops its own databases as it stops; this drops the ceilings' too, and forgets the run
  // only once none of its databases is left.
  atTeardown('databases', async () => {
    if (settings.keepData)
      return log(`databases kept (BENCH_KEEP_DATA=1): ${dbPrefix}_*; drop them yourself, pnpm bench leaves them alone`);
    await dropDatabases(infra.MONGO_URL, dbPrefix);
    forgetRun(runsDir, runId);
  });
  return infra;
}

/** The bare server and the stack of most rows (with --cpu-prof on the profiled services under BENCH_PROFILE). */
async function startBench(settings: BenchSettings, infra: InfraEnv): Promise<Bench> {
  const baseline = await startBaseline();
  atTeardown('baseline server', () => baseline.child.kill());
  const secrets = localSecrets();
  const analyticsPort = await freePort();
  const profiled = settings.profile ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : undefined;
  const processEnv = Object.entries(productionProcessEnv())
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  log(
    `node flags of the services: ${productionNodeArgs(settings.nodeOptions).join(' ') || '(none)'}; ${processEnv || 'no C library settings'}`,
  );
  const load = settings.load;
  log(
    `run ${runId}: ${load.runs} run(s) of ${load.durationS} s after ${load.warmupS} s warm-up, ${load.connections} connections; logs in ${logDir}`,
  );
  const startStack = benchStacks(infra, secrets, settings);
  const { stack } = await startStack(
    '',
    analyticsPort,
    profiled ? Object.fromEntries(settings.profiledServices.map((name) => [name, profiled])) : undefined,
  );
  return {
    settings,
    infra,
    secrets,
    startStack,
    stack,
    gw: stack.gatewayUrl,
    analyticsUrl: `http://127.0.0.1:${analyticsPort}`,
    admin: client(stack.gatewayUrl, secrets.ADMIN_TOKEN),
    adminH: { authorization: `Bearer ${secrets.ADMIN_TOKEN}` },
    baselineUrl: baseline.url,
    table: new Table(),
    memory: new MemoryWatch(),
    carry: { floorParts: new Map(), cpuInsertOne: '', growthNote: '' },
  };
}

/** The memory floor, the profiles written, everything started stopped; then the report and the profiles' top frames. */
async function finish(bench: Bench, startedAt: Date, runCpu: ReturnType<typeof cpuSnapshot>) {
  let floor: Awaited<ReturnType<typeof memoryFloor>>;
  try {
    floor = await memoryFloor(bench.settings.nodeOptions);
    if (bench.settings.profile) await stopProfiled(bench);
  } finally {
    await teardown(log);
  }
  report(
    results(
      bench,
      startedAt,
      floor,
      cpuBetween(runCpu, cpuSnapshot(), () => ''),
    ),
  );
  if (!bench.settings.profile) return;
  for (const f of readdirSync(profDir).filter((n) => n.endsWith('.cpuprofile'))) {
    console.log(`\nTop frames (self time) of ${f}:`);
    console.log(topFrames(join(profDir, f), 15));
  }
}

/** The profiles are written when the processes exit: give them all the time they need. */
async function stopProfiled(bench: Bench) {
  const profiledProcs = bench.stack.processes.filter((p) => bench.settings.profiledServices.includes(p.name));
  await Promise.all(
    profiledProcs.map(async (p) => {
      const t0 = Date.now();
      p.child.kill('SIGTERM');
      await Promise.race([p.exited, new Promise((r) => setTimeout(r, 90_000))]);
      log(`${p.name} exited after ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }),
  );
}

// After a signal its handler exits, once the teardown is done (the rows still running fail as their stack goes away).
main().then(
  () => {
    if (!interrupted()) process.exit(0);
  },
  (err) => {
    if (interrupted()) return;
    console.error(err);
    process.exit(1);
  },
);
