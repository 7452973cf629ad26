import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { counter } from './metrics';

type Collect = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;
let collector: Collect | undefined;

/** V8's collector, without exposing `gc` to the process's own global scope (only a fresh context gets it). */
function collect(): Collect {
  if (!collector) {
    setFlagsFromString('--expose-gc');
    collector = runInNewContext('gc') as Collect;
  }
  return collector;
}

/** Bytes the young generation holds in memory now (both semi-spaces). */
export function youngGenerationBytes(): number {
  return getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.physical_space_size ?? 0;
}

/**
 * Runs V8's memory-reducing collection (the one it runs before it gives up on memory): garbage is collected, the old
 * generation compacted, and the young generation returned to its smallest size.
 */
export function compactMemory(): void {
  collect()({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

const compactions = () =>
  counter('process_idle_compactions_total', 'Memory-reducing collections run while the process was idle');

export interface IdleCompactionOptions {
  /** How often the process checks whether it has been idle (ms). */
  everyMs?: number;
  /** Below this share of one core used since the last check, the process counts as idle. */
  idleCpuShare?: number;
  /** A young generation at most this large is left alone (bytes). */
  minYoungBytes?: number;
}

/**
 * Idle memory. V8 grows the young generation (up to `--max-semi-space-size`, twice: two semi-spaces) while a process
 * starts or works, and nothing shrinks it when the process goes quiet, because a quiet process does not collect. So
 * once now (after start) and at every check that finds the process idle since the previous one, the memory-reducing
 * collection runs: about 18 MB less resident memory per service at idle (docs/performance.md, "Idle memory"). Load grows the young
 * generation back as it needs. The collection pauses the process for about 15 ms on a service's heap; it runs only
 * when the process is idle and its young generation has grown past `minYoungBytes`. Returns a stop function.
 */
export function compactMemoryWhenIdle(opts: IdleCompactionOptions = {}): () => void {
  const everyMs = opts.everyMs ?? 30_000;
  const idleShare = opts.idleCpuShare ?? 0.01;
  const minYoung = opts.minYoungBytes ?? 2 * 1024 * 1024;
  const run = () => {
    if (youngGenerationBytes() <= minYoung) return;
    compactMemory();
    compactions().inc();
  };
  run();
  let cpu = process.cpuUsage();
  let at = performance.now();
  const timer = setInterval(() => {
    const used = process.cpuUsage(cpu);
    const now = performance.now();
    const share = (used.user + used.system) / 1000 / Math.max(1, now - at);
    if (share < idleShare) run();
    // measured after the collection, so its own time does not count as work
    cpu = process.cpuUsage();
    at = performance.now();
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
