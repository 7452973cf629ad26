// BENCH_SECTIONS=drift (not in the default): how this machine's speed moves from one run to the next, B alone, run
// after run, with its CPU per request.
import { runB, type BenchContext } from '../context';
import { cpuBetween, cpuNote, cpuSnapshot } from '../cpu';
import { cpuLabel } from '../processes';

export async function driftRows(ctx: BenchContext) {
  for (let i = 0; i < ctx.settings.driftRuns; i++) {
    const [at, before] = [new Date().toISOString().slice(11, 19), cpuSnapshot()];
    const run = await runB(ctx);
    const cpu = cpuNote(cpuBetween(before, cpuSnapshot(), cpuLabel(ctx.stack)), run.completed ?? 1);
    ctx.table.add(`B again, run ${i + 1}`, run, undefined, `from ${at}; ${cpu.text}`);
  }
}
