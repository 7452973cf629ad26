// pnpm bench:render [file]: the results section of docs/performance.md and the performance table of README.md,
// rendered from one run's results (docs/bench/latest.json; given a file, e.g. .bench/latest.json after `pnpm bench`,
// that run becomes docs/bench/latest.json first). pnpm bench:render:check (in pnpm check) fails when either section
// differs from what the committed results render to, so nobody copies figures by hand.
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fmt, memoryMet, runLines, tables, type BenchResults, type Row } from './results';

const root = resolve(__dirname, '..', '..');
export const RESULTS_PATH = join('docs', 'bench', 'latest.json');
export const BEGIN = '<!-- bench:begin -->';
export const END = '<!-- bench:end -->';
const NOTICE =
  '<!-- rendered by `pnpm bench:render` from docs/bench/latest.json: render another run instead of editing this -->';

export function readResults(file: string): BenchResults {
  const r = JSON.parse(readFileSync(file, 'utf8')) as BenchResults;
  if (r.format !== 1 || !r.run || !Array.isArray(r.rows)) throw new Error(`${file} holds no bench results (format 1)`);
  return r;
}

const int = (n: number | undefined) => (n === undefined || n === null ? '' : Math.round(n).toLocaleString('en-US'));
const when = (iso: string) => `${iso.slice(0, 16).replace('T', ' ')} UTC`;
const pretty = (text: string) => text.replace(/>=/g, '≥').replace(/<=/g, '≤').replace(/ x /g, ' × ');

/** The targets of a run, met or not: every row with a target, and each process's memory. */
function targets(r: BenchResults): { met: number; all: number; missed: string[] } {
  const rows = r.rows.filter((x) => x.target !== undefined);
  const missed = [
    ...rows.filter((x) => !x.met).map((x) => x.name),
    ...r.memory.filter((m) => !memoryMet(m)).map((m) => `memory of ${m.name}`),
  ];
  const all = rows.length + r.memory.length;
  return { met: all - missed.length, all, missed };
}

/** One sentence on the run: what was measured, when, where, and how many targets it met; then where its figures come
 * from when the bench did not write them (in full, or as a pointer to the page that gives it). */
function runSentence(r: BenchResults, source: 'full' | 'pointer'): string {
  const { met, all, missed } = targets(r);
  const commit = `commit ${r.run.commit.slice(0, 7)}${r.run.dirty ? ' with uncommitted changes' : ''}`;
  const outcome = missed.length
    ? `${met} of ${all} targets met (missed: ${missed.join('; ')})`
    : `all ${all} targets met`;
  const run = `\`pnpm bench\` of ${commit}, ${when(r.run.startedAt)}, on ${r.run.machine.cpus} x ${r.run.machine.model}: ${outcome}`;
  if (!r.run.source) return `${run}.`;
  return source === 'full'
    ? `${run}. ${r.run.source}`
    : `${run} (its figures converted from an earlier record of it, named in docs/performance.md).`;
}

/** The figure a row's target reads, as the README shows it. */
function measured(x: Row): string {
  if (x.figure) return x.figure;
  const target = x.target ?? '';
  if (/p99|p50/.test(target))
    return [`p99 ${fmt(x.p99, 1)} ms`, x.rps !== undefined && x.rps !== null ? `at ${int(x.rps)}/s` : '']
      .filter(Boolean)
      .join(' ');
  const against = [
    x.ofCeiling !== undefined && x.ofCeiling !== null ? `${x.ofCeiling.toFixed(2)} × the ceiling` : '',
    / x B/.test(target) ? `${fmt(x.ratio, 3)} × B` : '',
  ].filter(Boolean);
  return `${int(x.rps)} req/s${against.length ? `: ${against.join(', ')}` : ''}`;
}

/** docs/performance.md's results: the run's sentence, and the table the bench printed. */
export function performanceSection(r: BenchResults): string {
  return [NOTICE, '', runSentence(r, 'full'), '', ...runLines(r).map((l) => `- ${l}`), '', ...tables(r)].join('\n');
}

/** README.md's table: every row with a target, the figure it reads, and the memory of the processes. */
export function readmeSection(r: BenchResults): string {
  const b = r.rows.find((x) => x.name.startsWith('B: '));
  const mem = r.memory;
  const memoryLine = mem.length
    ? [
        `| memory per process (RSS) | ≤ ${Math.max(...mem.map((m) => m.idleMb))} MB idle, ≤ ${Math.max(...mem.map((m) => m.loadMb))} MB under load | ≤ 100 MB idle, ≤ 200 MB under load | ${mem.every(memoryMet) ? 'yes' : 'NO'} |`,
      ]
    : [];
  return [
    NOTICE,
    '',
    `${runSentence(r, 'pointer')} B is a bare \`node:http\` server on the same machine${b ? ` (${int(b.rps)} req/s)` : ''}; a ceiling is the MongoDB driver alone doing the same work on the same database. Every row with its notes, the machine and how to run it: [docs/performance.md](docs/performance.md#results).`,
    '',
    '| path | measured | target | met |',
    '|---|---|---|---|',
    ...r.rows
      .filter((x) => x.target !== undefined)
      .map((x) => `| ${x.name} | ${measured(x)} | ${pretty(x.target!)} | ${x.met ? 'yes' : 'NO'} |`),
    ...memoryLine,
  ].join('\n');
}

/** `text` with what stands between the markers replaced by `section`. */
export function replaceSection(text: string, section: string, file: string): string {
  const begin = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`${file} has no ${BEGIN} … ${END} section`);
  return `${text.slice(0, begin + BEGIN.length)}\n${section}\n${text.slice(end)}`;
}

/** The files with a bench section, and what renders it. */
const DOCS = [
  { path: join('docs', 'performance.md'), render: performanceSection },
  { path: 'README.md', render: readmeSection },
];

/** Each rendered file (relative to `dir`) as it is and as the results render it. */
export function renderDocs(r: BenchResults, dir = root): Array<{ path: string; now: string; rendered: string }> {
  return DOCS.map(({ path, render }) => {
    const now = readFileSync(join(dir, path), 'utf8');
    return { path, now, rendered: replaceSection(now, render(r), path) };
  });
}

/** The files under `dir` whose bench section is not what its docs/bench/latest.json renders to. */
export function staleDocs(dir = root): string[] {
  return renderDocs(readResults(join(dir, RESULTS_PATH)), dir)
    .filter((d) => d.now !== d.rendered)
    .map((d) => d.path);
}

function main(args: string[]) {
  const [mode, input] = args;
  if (mode === 'check') {
    const stale = staleDocs();
    for (const path of stale)
      console.error(`${path}: its bench section differs from what ${RESULTS_PATH} renders to; run pnpm bench:render`);
    process.exit(stale.length ? 1 : 0);
  }
  if (mode !== 'write') throw new Error('usage: render.ts write [results.json] | check');
  const file = join(root, RESULTS_PATH);
  if (input) writeFileSync(file, JSON.stringify(readResults(resolve(input)), null, 2) + '\n');
  for (const d of renderDocs(readResults(file)))
    if (d.now !== d.rendered) writeFileSync(join(root, d.path), d.rendered);
  console.log(`rendered docs/performance.md and README.md from ${RESULTS_PATH}`);
}

if (require.main === module) main(process.argv.slice(2));
