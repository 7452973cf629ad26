// The end of a run: its results as data (.bench/bench-<run id>.json and .bench/latest.json, the input of
// `pnpm bench:render`) and as the table it prints (.bench/latest.md).
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '@platform/testkit';
import type { Bench } from './context';
import type { CpuUse } from './cpu';
import type { BenchResults, Machine, RunSettings } from './results';
import { runReport } from './results';
import { log, outDir, runId } from './run';
import { productionNodeArgs, productionProcessEnv } from './stacks';

/** The commit measured, and whether the tree has changes beside it ('unknown' outside a git checkout). */
function commitOf(): { commit: string; dirty: boolean } {
  try {
    const git = (...args: string[]) =>
      execFileSync('git', args, { cwd: repoRoot, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return { commit: git('rev-parse', 'HEAD'), dirty: git('status', '--porcelain', '--untracked-files=no') !== '' };
  } catch {
    return { commit: 'unknown', dirty: false };
  }
}

/** This machine, as the report's first line gives it. Steal: the time the host gave this virtual machine's cores to
 * others while they had work; every row of a run with much of it is slower than the same code on a quiet host, and
 * the rows that cross more processes the more. */
function machine(whole: CpuUse): Machine {
  return {
    cpus: os.cpus().length,
    model: os.cpus()[0]?.model ?? 'cpu',
    memoryGb: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.platform()} ${os.release()}`,
    node: process.version,
    loadAverage: os.loadavg()[0]!,
    stealShare: whole.stealShare,
  };
}

function runSettings(bench: Bench): RunSettings {
  const s = bench.settings;
  return {
    ...s.load,
    quick: s.quick,
    sections: [...s.sections],
    ...(s.profile ? { profile: s.profile } : {}),
    lagSeconds: s.lagSeconds,
    growthSizes: s.growthSizes,
    writeGrowthSize: s.writeGrowthSize,
    growthLagSeconds: s.growthLagSeconds,
    growthLagRuns: s.growthLagRuns,
    growthRateRounds: s.growthRateRounds,
    webhookSteps: s.webhookSteps,
    nodeArgs: productionNodeArgs(s.nodeOptions),
    processEnv: productionProcessEnv(),
    stackEnv: s.stackEnv,
  };
}

export function results(
  bench: Bench,
  startedAt: Date,
  floor: BenchResults['memoryFloor'],
  whole: CpuUse,
): BenchResults {
  return {
    format: 1,
    run: {
      id: runId,
      startedAt: startedAt.toISOString(),
      ...commitOf(),
      machine: machine(whole),
      settings: runSettings(bench),
      notes: bench.carry.growthNote ? [bench.carry.growthNote] : [],
    },
    rows: bench.table.rows,
    memory: bench.memory.rows(),
    memoryFloor: floor,
  };
}

/** Writes the run's results and prints its table. */
export function report(r: BenchResults) {
  const md = runReport(r);
  mkdirSync(outDir, { recursive: true });
  const json = JSON.stringify(r, null, 2) + '\n';
  writeFileSync(join(outDir, `bench-${runId}.json`), json);
  writeFileSync(join(outDir, 'latest.json'), json);
  writeFileSync(join(outDir, 'latest.md'), md + '\n');
  console.log('\n' + md + '\n');
  log(
    `written to .bench/bench-${runId}.json and .bench/latest.md; \`pnpm bench:render .bench/bench-${runId}.json\` puts it in the docs`,
  );
}
