// The table a run builds: every row in the order measured, each read against B (the bare server measured first) and,
// where it has one, against a ceiling (the database driver alone doing the same work).
import type { LoadResult } from './load';
import type { Paired } from './paired';
import type { Row } from './results';
import { log } from './run';

export interface Target {
  text: string;
  ok: (row: Row) => boolean;
}

type Figures = LoadResult | { rps?: number; p50?: number; p99?: number };

const withNote = (note: string | undefined, more: string) => `${note ? note + '; ' : ''}${more}`;
const hasErrors = (row: Row) => /errors or unexpected statuses/.test(row.note ?? '');

/** At least `x` times B. */
export const atLeast = (x: number): Target => ({ text: `>= ${x} x B`, ok: (r) => (r.ratio ?? 0) >= x });
/** At least `x` times the ceiling the row was read against. */
export const ceilingAtLeast = (x: number) => (r: Row) => (r.ofCeiling ?? 0) >= x;

/** How a paired ratio reads in a note: `0.053 x B beside it (B 32470, 29105, 32260)`. */
function besideText(ref: string, { rates, ratio }: { rates: number[]; ratio: number }): string {
  return `${ratio.toFixed(ref === 'B' ? 3 : 2)} x ${ref} beside it (${ref} ${rates.map((x) => x.toFixed(0)).join(', ')})`;
}

function logRow(row: Row, r: Figures) {
  const runs =
    'runRates' in r && r.runRates && r.runRates.length > 1
      ? ` (runs: ${r.runRates.map((x) => x.toFixed(0)).join(', ')})`
      : '';
  const latency = [r.p50 !== undefined ? `p50 ${r.p50} ms` : '', r.p99 !== undefined ? `p99 ${r.p99} ms` : '']
    .filter(Boolean)
    .join(', ');
  const rate = r.rps !== undefined ? r.rps.toFixed(0) + ' req/s' + runs : '';
  const ratio = row.ratio !== undefined && !Number.isNaN(row.ratio) ? `, ${row.ratio.toFixed(3)} x B` : '';
  log(`${row.name}: ${[rate, latency].filter(Boolean).join(', ')}${ratio}${row.note ? ` (${row.note})` : ''}`);
}

export class Table {
  readonly rows: Row[] = [];
  /** The bare server's rate, once measured (the first row). */
  B = NaN;
  /** Ceiling rows by name (the driver alone), to read service rows against. */
  private readonly ceilings = new Map<string, number>();

  add(name: string, r: Figures, target?: Target, note?: string): Row {
    const row: Row = {
      name,
      rps: r.rps,
      p50: r.p50,
      p99: r.p99,
      ratio: r.rps !== undefined ? r.rps / this.B : undefined,
      note,
    };
    const bad = 'errors' in r ? r.errors + r.unexpected : 0;
    const kinds =
      'errorKinds' in r && r.errorKinds
        ? ` (${Object.entries(r.errorKinds)
            .map(([k, n]) => `${k}: ${n}`)
            .join(', ')})`
        : '';
    if (bad) row.note = withNote(row.note, `${bad} errors or unexpected statuses${kinds}`);
    if (target) {
      row.target = target.text;
      row.met = target.ok(row) && !bad;
    }
    this.rows.push(row);
    logRow(row, r);
    return row;
  }

  /** A row made whole by its section (a count, a search's result), added as it is. */
  push(row: Row): Row {
    this.rows.push(row);
    return row;
  }

  addCeiling(
    name: string,
    r: { rps: number; p50: number; p99: number; errors: number; unexpected: number },
    note?: string,
  ): Row {
    const row = this.add(`ceiling: ${name}`, r as LoadResult, undefined, note);
    this.ceilings.set(name, r.rps);
    return row;
  }

  /** Marks `row` with its fraction of ceiling `name` (when that ceiling was measured in this run). */
  againstCeiling(row: Row, name: string): Row {
    const c = this.ceilings.get(name);
    if (c === undefined || row.rps === undefined) {
      row.note = withNote(row.note, `no ceiling "${name}" in this run`);
      return row;
    }
    row.ofCeiling = row.rps / c;
    row.note = withNote(row.note, `${row.ofCeiling.toFixed(2)} x ${name}`);
    log(`  ${row.name}: ${row.ofCeiling.toFixed(2)} x ${name}`);
    return row;
  }

  /** Sets (again) a row's target, with the ceiling known (targets read `ofCeiling`). */
  target(row: Row, text: string, ok: (r: Row) => boolean, figure?: string): Row {
    row.target = text;
    row.met = ok(row) && !hasErrors(row);
    if (figure !== undefined) row.figure = figure;
    return row;
  }

  /** A row of measurePaired: its ratio to B and its fraction of a ceiling are those measured beside it. */
  addPaired(name: string, paired: Paired, goal?: Target): Row {
    const row = this.add(name, paired.result);
    const notes: string[] = [];
    for (const [ref, against] of paired.against) {
      if (ref === 'B') row.ratio = against.ratio;
      else row.ofCeiling = against.ratio;
      notes.push(besideText(ref, against));
    }
    // A host that takes a core now and then slows a path through many processes more than a loop of two, so a round
    // whose row ran with steal and whose references did not is not a like-for-like pair.
    const pct = (xs: number[]) => xs.map((x) => `${(x * 100).toFixed(0)} %`).join(', ');
    if ([...paired.steal.row, ...paired.steal.beside].some((x) => x >= 0.005)) {
      notes.push(
        `host steal during its runs ${pct(paired.steal.row)}, during the runs beside them ${pct(paired.steal.beside)}`,
      );
    }
    row.note = [row.note, ...notes].filter(Boolean).join('; ');
    log(`  ${name}: ${notes.join('; ')}`);
    if (goal) this.target(row, goal.text, goal.ok);
    return row;
  }
}
