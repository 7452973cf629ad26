// This run's identity and settings: its id, the database prefix of its stacks, the options it was given, the bounds
// of its phases, and its log line.
import { join } from 'node:path';
import { repoRoot } from '@platform/testkit';

export function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

/** Writes per fault (`--total N`). */
export const TOTAL = Number(arg('total') ?? 600);
/** Writers in parallel. */
export const WORKERS = 8;
/** Run only the faults whose name contains this (`--only <name>`). */
export const only = arg('only');
/** One HTTP request of the load never waits longer than this. */
export const REQUEST_TIMEOUT_MS = 15_000;
/** A write is retried (same id) until acknowledged or this long has passed. */
export const WRITE_DEADLINE_MS = 120_000;
/** How long a delivery fault waits, after its load, for every accepted event to reach the receiver. */
export const DELIVERY_WAIT_MS = 150_000;
export const BOUND = {
  stackStart: 120_000,
  fault: 300_000,
  readBack: 150_000,
  teardown: 60_000,
  run: 75 * 60_000,
};
export const runId = Date.now().toString(36);
/** One prefix for the run's stacks (one after another): the read-backs look there. */
export const dbPrefix = `chaos${runId}`;
export const t0 = Date.now();
export const outDir = join(repoRoot, '.infra', 'chaos');
export const logDirOf = (stack: string) => join(repoRoot, '.infra', 'chaos-logs', `${stack}-${runId}`);

export function say(msg: string): void {
  console.log(`[chaos +${((Date.now() - t0) / 1000).toFixed(1)} s] ${msg}`);
}

/** Whether the fault named `name` runs (`--only`). */
export const want = (name: string) => !only || name.toLowerCase().includes(only.toLowerCase());

/** Sleeps; an aborted signal ends the sleep early. */
export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((r) => {
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      r();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
