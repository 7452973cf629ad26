// pnpm chaos:render [file]: merges a run's rows (default .infra/chaos/last.json, written by `pnpm chaos`) into
// docs/chaos/latest.json (a row run again, the same `key` or else the same `fault`, replaces the one before, in its
// place; new rows go last; the rows a run did not run stay as they were; each row keeps the run it comes from) and
// renders the results table of docs/reliability.md from it. pnpm chaos:render:check (in pnpm check) fails when that
// table differs from what the committed JSON renders to, so nobody copies figures by hand.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { type Row, tableLines } from './report';

const root = resolve(__dirname, '..', '..');
const RESULTS = join(root, 'docs', 'chaos', 'latest.json');
const DOC = join(root, 'docs', 'reliability.md');
const BEGIN = '<!-- chaos:begin -->';
const END = '<!-- chaos:end -->';
const NOTICE =
  '<!-- rendered by `pnpm chaos:render` from docs/chaos/latest.json: render another run instead of editing this -->';

/** Where a row comes from: its run's start, id and commit. */
export interface RunOf {
  at: string;
  runId: string;
  commit?: string;
  /** `--total` of the run. */
  writesPerFault?: number;
}
type Stored = Row & { run: RunOf };
interface Results {
  format: 1;
  rows: Stored[];
}
/** What `pnpm chaos` writes (report.ts). */
interface RunFile {
  at: string;
  runId: string;
  commit?: string;
  writesPerFault?: number;
  rows: Row[];
}

const runLabel = (r: RunOf) =>
  `${r.at.slice(0, 16).replace('T', ' ')} UTC${r.commit ? `, ${r.commit}` : ''}${r.writesPerFault ? `, --total ${r.writesPerFault}` : ''}`;

function render(results: Results): string {
  const lines = tableLines(results.rows, [['run', (r) => runLabel(r.run)]]);
  const notes: string[] = [];
  for (const r of results.rows) {
    if (r.p99Ms)
      notes.push(
        `- ${r.fault}: p99 of the writes ${r.p99Ms.before ?? '-'} ms before the fault, ${r.p99Ms.during ?? '-'} ms during it, ${r.p99Ms.after ?? '-'} ms from 2 s after it.`,
      );
    const soak = r.soak as
      | {
          ratePerS?: number;
          maxRatePerS?: number;
          rssMb?: Record<string, { start: number; peak: number; end: number }>;
          intervals?: Array<{ p99Ms: number | null; byKind?: Record<string, { p99Ms: number | null }> }>;
        }
      | undefined;
    if (soak?.rssMb) {
      const range = (of: Array<number | null | undefined>) => {
        const ms = of.filter((x): x is number => typeof x === 'number');
        return ms.length ? `${Math.min(...ms)} to ${Math.max(...ms)} ms` : '-';
      };
      const intervals = soak.intervals ?? [];
      const kinds = Object.keys(intervals[0]?.byKind ?? {});
      const perKind = kinds.length
        ? ` (${kinds.map((k) => `${k} ${range(intervals.map((i) => i.byKind?.[k]?.p99Ms))}`).join(', ')})`
        : '';
      const mem = Object.entries(soak.rssMb)
        .map(([proc, m]) => `${proc} ${m.start.toFixed(0)} / ${m.peak.toFixed(0)} / ${m.end.toFixed(0)}`)
        .join(', ');
      notes.push(
        `- ${r.fault}: ${soak.ratePerS} operations/s (the probe reached ${soak.maxRatePerS}); p99 per interval ${range(intervals.map((i) => i.p99Ms))}${perKind}; resident memory in MB (start / peak / end): ${mem}.`,
      );
    }
    if (r.mismatches?.length) notes.push(`- ${r.fault}: counts that did not match: ${r.mismatches.join('; ')}.`);
  }
  return [NOTICE, '', ...lines, ...(notes.length ? ['', ...notes] : [])].join('\n');
}

function section(doc: string): { before: string; inside: string; after: string } {
  const a = doc.indexOf(BEGIN);
  const b = doc.indexOf(END);
  if (a < 0 || b < a) throw new Error(`${DOC} has no ${BEGIN} … ${END} section`);
  return { before: doc.slice(0, a + BEGIN.length), inside: doc.slice(a + BEGIN.length, b), after: doc.slice(b) };
}

function merge(results: Results, run: RunFile): Results {
  const rows = [...results.rows];
  const runOf: RunOf = {
    at: run.at,
    runId: run.runId,
    ...(run.commit ? { commit: run.commit } : {}),
    ...(run.writesPerFault ? { writesPerFault: run.writesPerFault } : {}),
  };
  for (const row of run.rows) {
    const stored: Stored = { ...row, run: runOf };
    const i = rows.findIndex((r) => (r.key ?? r.fault) === (row.key ?? row.fault));
    if (i >= 0) rows[i] = stored;
    else rows.push(stored);
  }
  return { format: 1, rows };
}

const mode = process.argv[2] ?? 'write';
const results: Results = existsSync(RESULTS)
  ? (JSON.parse(readFileSync(RESULTS, 'utf8')) as Results)
  : { format: 1, rows: [] };
const doc = readFileSync(DOC, 'utf8');
const { before, inside, after } = section(doc);
if (mode === 'check') {
  if (inside.trim() !== render(results).trim()) {
    console.error(
      'the results table of docs/reliability.md is stale: run `pnpm chaos:render` (it renders docs/chaos/latest.json)',
    );
    process.exit(1);
  }
  console.log('docs/reliability.md renders docs/chaos/latest.json');
} else {
  const file = process.argv[3] ?? join(root, '.infra', 'chaos', 'last.json');
  const merged = existsSync(file) ? merge(results, JSON.parse(readFileSync(file, 'utf8')) as RunFile) : results;
  mkdirSync(dirname(RESULTS), { recursive: true });
  writeFileSync(RESULTS, `${JSON.stringify(merged, null, 2)}\n`);
  writeFileSync(DOC, `${before}\n${render(merged)}\n${after}`);
  console.log(
    `rendered ${merged.rows.length} rows into docs/reliability.md (from docs/chaos/latest.json${existsSync(file) ? `, merged with ${file}` : ''})`,
  );
}
