// The rows of the run, its phases (each with a time bound), and the table and JSON they end in.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BOUND, outDir, runId, say, t0, TOTAL } from './run';

export interface Row {
  fault: string;
  /** What names the row across runs when its `fault` varies with the run's options (the soak's length); else `fault`. */
  key?: string;
  sent: number;
  accepted: number;
  lost: number | string;
  lostIds?: string[];
  duplicated: number | string;
  '5xx': number;
  /** Of the 5xx: requests that were safe to repeat (reads, events with an id), which the gateway sends again. */
  '5xxSafe': number;
  /** Of the 5xx: the others (creates without a key of their own). */
  '5xxNotSafe': number;
  recoverMs: number | string;
  /** Duplicated deliveries that were redeliveries of one delivery (same webhook-id): at-least-once, receivers dedupe. */
  redeliveries?: number;
  /** Requests that got no answer at all (connection refused or reset, timed out). */
  failed?: number;
  /** Failed answers by status (`0`: no answer; ` safe`: of requests safe to repeat). */
  errors?: Record<string, number>;
  /** p99 answer time of the writes (ms): before the fault, during it, and from 2 s after it (rows that measure it). */
  p99Ms?: { before?: number; during?: number; after?: number };
  /** Counts that did not match what was accepted (the delivery log, the analytics counters): a failed row. */
  mismatches?: string[];
  /** The soak's figures (rows/soak.ts): rates, p99 per interval, resident memory of every process, checks. */
  soak?: object;
  /** The row's target beyond 0 lost and 0 duplicated: no 5xx for requests safe to repeat, or no failed request at all. */
  target?: 'no 5xx when safe to repeat' | 'no failed request';
}
export const rows: Row[] = [];

export class PhaseTimeout extends Error {}

/** Runs one phase with a time bound; over it, the phase's signal is aborted and the phase fails (it never hangs). */
export async function bounded<T>(label: string, ms: number, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ac = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const started = Date.now();
  say(`${label}: started (bound ${ms / 1000} s)`);
  try {
    return await Promise.race([
      fn(ac.signal),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          ac.abort();
          reject(new PhaseTimeout(`${label} exceeded its bound of ${ms / 1000} s`));
        }, ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
    say(`${label}: ended after ${((Date.now() - started) / 1000).toFixed(1)} s`);
  }
}

export function failedRow(fault: string, err: unknown): void {
  const msg = (err as Error).message ?? String(err);
  console.error(`[chaos] ${fault}: ${msg}`);
  rows.push({
    fault,
    sent: 0,
    accepted: 0,
    lost: `FAILED: ${msg.slice(0, 100)}`,
    duplicated: '-',
    '5xx': 0,
    '5xxSafe': 0,
    '5xxNotSafe': 0,
    recoverMs: '-',
  });
}

/** One fault within its bound; a fault that fails or runs over is a row of its own, and the run goes on. */
export async function fault(
  name: string,
  fn: (signal: AbortSignal) => Promise<Row>,
  target?: Row['target'],
  boundMs = BOUND.fault,
): Promise<void> {
  try {
    rows.push({ ...(await bounded(name, boundMs, fn)), ...(target ? { target } : {}) });
  } catch (err) {
    failedRow(name, err);
  }
}

/** The table of `rows` as markdown lines; `extra` adds columns (name and cell of a row). */
export function tableLines<R extends Row>(of: R[], extra: Array<[string, (r: R) => string]> = []): string[] {
  const header = [
    'fault',
    'requests sent',
    'accepted',
    'lost',
    'duplicated',
    '5xx (safe to repeat / not)',
    'no answer',
    'time to recover',
    ...extra.map(([name]) => name),
  ];
  const recovery = (ms: number | string) => (typeof ms === 'number' ? `${(ms / 1000).toFixed(1)} s` : ms);
  return [
    `| ${header.join(' | ')} |`,
    `|${header.map(() => '---').join('|')}|`,
    ...of.map(
      (r) =>
        `| ${[
          r.fault,
          r.sent,
          r.accepted,
          r.lost,
          `${r.duplicated}${r.redeliveries ? ` (${r.redeliveries} repeat a webhook-id)` : ''}`,
          `${r['5xx']} (${r['5xxSafe']} / ${r['5xxNotSafe']})`,
          r.failed ?? 0,
          recovery(r.recoverMs),
          ...extra.map(([, cell]) => cell(r)),
        ].join(' | ')} |`,
    ),
  ];
}

const table = () => tableLines(rows).join('\n');

/** The commit the run measured (`+` when the tree had changes), or undefined outside git. */
function commitOf(): string | undefined {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty =
      execFileSync(
        'git',
        // What the run writes itself (the soak's plot, docs/images) does not make the tree it measured a changed one.
        ['status', '--porcelain', '--untracked-files=no', '--', '.', ':(exclude)docs/images'],
        { encoding: 'utf8' },
      ).trim() !== '';
    return `${head}${dirty ? '+' : ''}`;
  } catch {
    return undefined;
  }
}

/** Prints the table, writes it (and the JSON) to .infra/chaos, and answers the exit code: 1 when a row failed. */
export function report(extra = ''): number {
  const t = table();
  console.log(`\n${t}\n${extra}`);
  mkdirSync(outDir, { recursive: true });
  const at = new Date().toISOString();
  const json = JSON.stringify(
    { at, runId, commit: commitOf(), writesPerFault: TOTAL, durationMs: Date.now() - t0, rows },
    null,
    2,
  );
  writeFileSync(join(outDir, 'last.json'), json);
  writeFileSync(join(outDir, `${runId}.json`), json);
  writeFileSync(join(outDir, 'last.md'), `${at}, ${TOTAL} writes per fault\n\n${t}\n${extra}`);
  say(`table written to .infra/chaos/last.json and last.md`);
  // Failed: a failed phase, a lost write, or a duplicate that is not a redelivery of one webhook-id (webhooks are
  // at least once: a delivery in flight when the dispatcher is killed is sent again with the same webhook-id).
  const missed = (r: Row) =>
    (r.target === 'no 5xx when safe to repeat' && (r['5xxSafe'] > 0 || (r.failed ?? 0) > 0)) ||
    (r.target === 'no failed request' && (r['5xx'] > 0 || (r.failed ?? 0) > 0));
  for (const r of rows.filter(missed)) console.error(`[chaos] target missed (${r.target}): ${r.fault}`);
  for (const r of rows.filter((r) => r.mismatches?.length))
    console.error(`[chaos] counts do not match (${r.mismatches!.join('; ')}): ${r.fault}`);
  const bad = rows.some(
    (r) =>
      typeof r.lost !== 'number' ||
      r.lost > 0 ||
      (typeof r.duplicated === 'number' && r.duplicated > (r.redeliveries ?? 0)) ||
      missed(r) ||
      (r.mismatches?.length ?? 0) > 0,
  );
  return bad ? 1 : 0;
}
