// What a bench run leaves behind until it ends, and how it is cleared: at the run's end, at once on Ctrl-C (SIGINT)
// or SIGTERM, and at the start of the next run for a run that was killed outright (SIGKILL, a machine restart).
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dropDatabases, processAlive } from '@platform/testkit';

type Step = () => unknown;

/** Steps still to run, newest last; each runs once. */
const steps: Array<{ name: string; run: () => Promise<void> }> = [];
/** Steps started, by `teardown` or by the section that registered them (awaited by `teardown` too). */
const started: Array<Promise<unknown>> = [];

/**
 * Registers what undoes something just started (stop a process, drop the run's databases). Steps run newest first,
 * each once, whether called through the returned function (the section that started it ends) or by `teardown`.
 */
export function atTeardown(name: string, step: Step): () => Promise<void> {
  let done: Promise<void> | undefined;
  const entry = {
    name,
    run: () => {
      if (!done) {
        const i = steps.indexOf(entry);
        if (i >= 0) steps.splice(i, 1);
        done = (async () => void (await step()))();
        started.push(done.catch(() => undefined));
      }
      return done;
    },
  };
  steps.push(entry);
  return entry.run;
}

let tearingDown: Promise<void> | undefined;

/**
 * Runs every step not run yet, newest first, and waits for the ones already under way; a step that fails is reported
 * and the others still run. Called twice (the run ends while a signal's teardown runs), both wait for the one teardown.
 */
export function teardown(report: (msg: string) => void): Promise<void> {
  tearingDown ??= (async () => {
    while (steps.length) {
      const step = steps[steps.length - 1]!;
      try {
        await step.run();
      } catch (err) {
        report(`teardown: ${step.name} failed: ${(err as Error).message}`);
      }
    }
    await Promise.all(started);
  })();
  return tearingDown;
}

let signalled = false;

/** Whether a signal ended the run: its handler exits the process once the teardown is done, nobody else should. */
export const interrupted = () => signalled;

/**
 * On SIGINT or SIGTERM: tears down and exits with 128 + the signal's number (130, 143). Signals that come while that
 * runs do not cut it short (Ctrl-C pressed again, or sent to the whole process group and relayed by a parent).
 * (A run killed outright is cleared by the next run: `sweepEarlierRuns` and testkit's `reapOrphans`.)
 */
export function teardownOnSignals(report: (msg: string) => void): void {
  const on = (signal: NodeJS.Signals, code: number) =>
    process.on(signal, () => {
      if (signalled) return;
      signalled = true;
      report(`${signal}: stopping the run's processes and dropping its databases`);
      void teardown(report).finally(() => process.exit(code));
    });
  on('SIGINT', 130);
  on('SIGTERM', 143);
}

/** A run's record: the process that owns its databases, and whether it asked to keep them (BENCH_KEEP_DATA). */
interface RunRecord {
  pid: number;
  dbPrefix: string;
  keep: boolean;
}

/**
 * Writes the run's record in `dir` (`<runId>.json`). It is removed by `forgetRun` once the run's databases are dropped;
 * a record left behind is a run that ended without that.
 */
export function recordRun(dir: string, runId: string, record: RunRecord): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${runId}.json`), JSON.stringify(record));
}

export function forgetRun(dir: string, runId: string): void {
  rmSync(join(dir, `${runId}.json`), { force: true });
}

/**
 * Drops the databases of earlier runs whose process is gone and that did not ask to keep them, and forgets those runs.
 * Returns the prefixes dropped.
 */
export async function sweepEarlierRuns(dir: string, mongoUrl: string): Promise<string[]> {
  let files: string[] = [];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  } catch {
    return [];
  }
  const dropped: string[] = [];
  for (const f of files) {
    const file = join(dir, f);
    let record: RunRecord;
    try {
      record = JSON.parse(readFileSync(file, 'utf8')) as RunRecord;
    } catch {
      rmSync(file, { force: true });
      continue;
    }
    if (record.keep || processAlive(record.pid)) continue;
    await dropDatabases(mongoUrl, record.dbPrefix);
    rmSync(file, { force: true });
    dropped.push(record.dbPrefix);
  }
  return dropped;
}
