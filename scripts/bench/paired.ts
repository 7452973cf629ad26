// Rows measured in turn with the references they are read against (docs/performance.md, "How a ratio is measured").
import { withSteal } from './cpu';
import { measure, median, type LoadResult, type LoadSettings, type LoadSpec } from './load';

/** A reference a row is read against (B, a database ceiling), measured again beside the row: one run, its rate. */
export interface Reference {
  name: string;
  run(): Promise<number>;
}

export interface Paired {
  result: LoadResult;
  /** Per reference: its rate in each round, and the median of the rounds' ratios (row / reference). */
  against: Map<string, { rates: number[]; ratio: number }>;
  /** The host's steal during each of the row's runs, and during the reference runs of each round. */
  steal: { row: number[]; beside: number[] };
}

/**
 * A row measured in turn with the references it is read against: `settings.runs` rounds, each one run of every
 * reference and then one run of the row (the first after the row's warm-up). This machine's speed swings by a fifth
 * within minutes at the same work per request, so each round's ratio is taken within the same half minute, and the
 * row's ratio is the median round's. The row's own rate is its median run, as for every other row.
 */
export async function measurePaired(
  spec: LoadSpec,
  refs: Reference[],
  settings: LoadSettings,
  around?: { start(): void; end(): void },
): Promise<Paired> {
  const runs: LoadResult[] = [];
  const rates = new Map<string, number[]>(refs.map((r) => [r.name, []]));
  const steal = { row: [] as number[], beside: [] as number[] };
  for (let i = 0; i < settings.runs; i++) {
    const beside = await withSteal(async () => {
      for (const ref of refs) rates.get(ref.name)!.push(await ref.run());
    });
    steal.beside.push(beside.steal);
    const own = await withSteal(() =>
      measure(spec, { ...settings, runs: 1, warmupS: i === 0 ? settings.warmupS : 0 }, around),
    );
    runs.push(own.value);
    steal.row.push(own.steal);
    around?.end();
  }
  const result = medianRun(runs);
  const against = new Map(
    [...rates].map(([name, xs]) => [name, { rates: xs, ratio: median(xs.map((x, i) => runs[i]!.rps / x)) }]),
  );
  return { result, against, steal };
}

/** Runs of one row made one at a time (in turn with others) as the row: its median run, every error counted. */
export function medianRun(runs: LoadResult[]): LoadResult {
  const m = median(runs.map((r) => r.rps));
  const chosen = runs.find((r) => r.rps === m)!;
  return {
    ...chosen,
    errors: runs.reduce((n, r) => n + r.errors, 0),
    unexpected: runs.reduce((n, r) => n + r.unexpected, 0),
    runs: runs.length,
    runRates: runs.map((r) => r.rps),
    completedAll: runs.reduce((n, r) => n + (r.completedAll ?? 0), 0),
  };
}
