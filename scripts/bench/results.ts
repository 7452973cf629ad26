// The results of one bench run as data (what `pnpm bench` writes to .bench/bench-<run id>.json and
// docs/bench/latest.json holds), and the table it prints: the same text the bench shows and the docs render.

/** One row of the table. Absent figures are empty cells. */
export interface Row {
  name: string;
  rps?: number;
  p50?: number;
  p99?: number;
  /** Throughput as a fraction of B. */
  ratio?: number;
  /** Throughput as a fraction of the database's own ceiling for the same work (driver alone). */
  ofCeiling?: number;
  target?: string;
  met?: boolean;
  note?: string;
  /** The figure the target reads, in words, where it is none of the columns (a ratio to another row, a count). */
  figure?: string;
}

export interface MemoryRow {
  name: string;
  idleMb: number;
  loadMb: number;
}

export interface Machine {
  cpus: number;
  model: string;
  memoryGb: number;
  /** Platform and kernel release (`linux 6.18.44`). */
  os: string;
  node: string;
  loadAverage: number;
  /** Share of the cores' time the host stole during the run (0..1). */
  stealShare: number;
}

export interface RunSettings {
  durationS: number;
  warmupS: number;
  runs: number;
  connections: number;
  quick: boolean;
  sections: string[];
  /** BENCH_PROFILE: only the profiled path ran. */
  profile?: 'events' | 'list';
  lagSeconds: number;
  growthSizes: number[];
  writeGrowthSize: number;
  growthLagSeconds: number;
  growthLagRuns: number;
  growthRateRounds: number;
  webhookSteps: number[];
  /** Node flags and C library settings of the services (the production image's unless overridden). */
  nodeArgs: string[];
  processEnv: Record<string, string>;
  /** BENCH_STACK_ENV, when set. */
  stackEnv: Record<string, string>;
}

export interface BenchResults {
  format: 1;
  run: {
    id: string;
    startedAt: string;
    /** The commit measured (`git rev-parse HEAD`), and whether the tree had changes beside it. */
    commit: string;
    dirty: boolean;
    /** Where the figures come from when not written by `pnpm bench` itself. */
    source?: string;
    machine: Machine;
    settings: RunSettings;
    /** Lines printed under the settings (how the growth rows sample). */
    notes: string[];
  };
  rows: Row[];
  memory: MemoryRow[];
  memoryFloor: Array<{ name: string; idleMb: number }>;
}

/** A number as the table prints it ('' for none). */
export function fmt(n: number | null | undefined, digits = 0): string {
  return n === undefined || n === null || Number.isNaN(n) ? '' : n.toFixed(digits);
}

export function machineLine(m: Machine): string {
  const stolen = `${(m.stealShare * 100).toFixed(1)} % of the cores' time stolen by the host during the run`;
  return `${m.cpus} x ${m.model}, ${m.memoryGb} GB, ${m.os}, node ${m.node}, load average at start ${m.loadAverage.toFixed(2)}, ${stolen}`;
}

export function settingsLine(s: RunSettings): string {
  return `${s.runs} run(s) of ${s.durationS} s (median reported) after ${s.warmupS} s warm-up, ${s.connections} connections (autocannon)`;
}

const MEMORY_TARGET = { idleMb: 100, loadMb: 200 };
export const memoryMet = (m: MemoryRow) => m.idleMb <= MEMORY_TARGET.idleMb && m.loadMb <= MEMORY_TARGET.loadMb;

/** The rows table and the memory table, as markdown. */
export function tables(r: BenchResults): string[] {
  const met = (x: boolean | undefined) => (x === undefined ? '' : x ? 'yes' : 'NO');
  return [
    `| path | req/s | p50 ms | p99 ms | × B | × ceiling | target | met |`,
    `|---|---:|---:|---:|---:|---:|---|---|`,
    ...r.rows.map(
      (x) =>
        `| ${x.name}${x.note ? ` (${x.note})` : ''} | ${fmt(x.rps)} | ${fmt(x.p50, 1)} | ${fmt(x.p99, 1)} | ${fmt(x.ratio, 3)} | ${fmt(x.ofCeiling, 2)} | ${x.target ?? ''} | ${met(x.met)} |`,
    ),
    '',
    `| process | RSS idle MB | RSS under load MB | target | met |`,
    `|---|---:|---:|---|---|`,
    ...r.memory.map(
      (m) =>
        `| ${m.name} | ${m.idleMb} | ${m.loadMb} | idle <= ${MEMORY_TARGET.idleMb}, load <= ${MEMORY_TARGET.loadMb} | ${met(memoryMet(m))} |`,
    ),
    ...r.memoryFloor.map((m) => `| ${m.name} | ${m.idleMb} |  |  |  |`),
  ];
}

/** The lines above the tables: the run, its settings, its notes. */
export function runLines(r: BenchResults): string[] {
  const commit = `commit ${r.run.commit.slice(0, 7)}${r.run.dirty ? ' with uncommitted changes' : ''}`;
  return [
    `Run ${r.run.id}, ${r.run.startedAt}, ${commit}; ${machineLine(r.run.machine)}`,
    settingsLine(r.run.settings),
    ...r.run.notes,
  ];
}

/** What the bench prints at the end of a run: the run's line, its settings, its notes, and the tables. */
export function runReport(r: BenchResults): string {
  return [...runLines(r), '', ...tables(r)].join('\n');
}
