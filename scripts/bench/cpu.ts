// Where the machine's CPU goes during a measurement: every process's user + system time from /proc, read before and
// after, grouped by what the process is (a service of the stack, the database, NATS, Redis, the load generator).
// With the machine's cores this gives the rate at which the path would use all of them: the ceiling a CPU-bound path
// runs into, whatever the database alone could do.
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import type { CpuRun } from './ceiling';
import { log } from './run';

/** Linux clock ticks a second (`getconf CLK_TCK`; 100 on every common kernel). */
const TICK_MS = 10;

export interface CpuSnapshot {
  at: number;
  /** Busy, stolen and total ticks of the whole machine (/proc/stat). */
  busy: number;
  /** Time the hypervisor ran something else while this machine had work for a core (`steal`). */
  steal: number;
  total: number;
  /** Ticks used so far by each process, and its read and write system calls (/proc/<pid>/io: syscr, syscw). */
  procs: Map<number, { comm: string; ticks: number; reads: number; writes: number }>;
}

/**
 * The whole machine's ticks so far (/proc/stat): in all, idle (iowait included), stolen by the host, and busy (the
 * rest: neither idle nor stolen).
 */
export function machineTicks(): { total: number; idle: number; steal: number; busy: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
  const steal = fields[7] ?? 0;
  return { total, idle, steal, busy: total - idle - steal };
}

/** The share of the machine's time stolen by the host while `job` ran. */
export async function withSteal<T>(job: () => Promise<T>): Promise<{ value: T; steal: number }> {
  const a = machineTicks();
  const value = await job();
  const b = machineTicks();
  return { value, steal: (b.steal - a.steal) / Math.max(1, b.total - a.total) };
}

export function cpuSnapshot(): CpuSnapshot {
  const { total, busy, steal } = machineTicks();
  const procs = new Map<number, { comm: string; ticks: number; reads: number; writes: number }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      // Node 24 names its main thread `MainThread`, which is the process's name in /proc: call it node.
      const name = stat.slice(stat.indexOf('(') + 1, close);
      const comm = name === 'MainThread' ? 'node' : name;
      const rest = stat.slice(close + 2).split(' ');
      // Fields 14 and 15 of proc(5): utime, stime (rest starts at field 3).
      // Read and write system calls (sockets included): each read is about one wake-up for a message, each write one
      // for its receiver.
      let io = '';
      try {
        io = readFileSync(`/proc/${entry}/io`, 'utf8');
      } catch {
        /* another user's process: its CPU still counts, its calls are unknown */
      }
      const calls = (name: string) => Number(new RegExp(`^${name}: (\\d+)`, 'm').exec(io)?.[1] ?? 0);
      procs.set(Number(entry), {
        comm,
        ticks: Number(rest[11]) + Number(rest[12]),
        reads: calls('syscr'),
        writes: calls('syscw'),
      });
    } catch {
      /* the process ended meanwhile */
    }
  }
  return { at: Date.now(), busy, steal, total, procs };
}

export interface CpuUse {
  wallMs: number;
  cores: number;
  /** Share of the whole machine that was busy (steal not counted). */
  busyShare: number;
  /** Share of the whole machine's time the hypervisor gave to others while it had work (steal). */
  stealShare: number;
  /** CPU ms by label, largest first. */
  byLabel: Array<[string, number]>;
  /** CPU ms of every process together. */
  totalMs: number;
  /** Read and write system calls by label. */
  calls: Map<string, { reads: number; writes: number }>;
}

/** CPU used between two snapshots, per label (`label(pid, comm)`; processes that started in between count whole). */
export function cpuBetween(a: CpuSnapshot, b: CpuSnapshot, label: (pid: number, comm: string) => string): CpuUse {
  const by = new Map<string, number>();
  const calls = new Map<string, { reads: number; writes: number }>();
  let totalMs = 0;
  for (const [pid, p] of b.procs) {
    const before = a.procs.get(pid);
    const name = label(pid, p.comm);
    const c = calls.get(name) ?? { reads: 0, writes: 0 };
    c.reads += p.reads - (before?.reads ?? 0);
    c.writes += p.writes - (before?.writes ?? 0);
    calls.set(name, c);
    const ms = (p.ticks - (before?.ticks ?? 0)) * TICK_MS;
    if (ms <= 0) continue;
    by.set(name, (by.get(name) ?? 0) + ms);
    totalMs += ms;
  }
  return {
    wallMs: b.at - a.at,
    cores: os.cpus().length,
    busyShare: (b.busy - a.busy) / Math.max(1, b.total - a.total),
    stealShare: (b.steal - a.steal) / Math.max(1, b.total - a.total),
    byLabel: [...by].sort((x, y) => y[1] - x[1]),
    totalMs,
    calls,
  };
}

/** Several measurements' CPU as one (their wall time, busy share and CPU ms by label added up). */
export function cpuSum(uses: CpuUse[]): CpuUse {
  const by = new Map<string, number>();
  const calls = new Map<string, { reads: number; writes: number }>();
  for (const u of uses) {
    for (const [name, ms] of u.byLabel) by.set(name, (by.get(name) ?? 0) + ms);
    for (const [name, c] of u.calls) {
      const sum = calls.get(name) ?? { reads: 0, writes: 0 };
      calls.set(name, { reads: sum.reads + c.reads, writes: sum.writes + c.writes });
    }
  }
  const wallMs = uses.reduce((n, u) => n + u.wallMs, 0);
  return {
    wallMs,
    cores: os.cpus().length,
    busyShare: uses.reduce((n, u) => n + u.busyShare * u.wallMs, 0) / Math.max(1, wallMs),
    stealShare: uses.reduce((n, u) => n + u.stealShare * u.wallMs, 0) / Math.max(1, wallMs),
    byLabel: [...by].sort((x, y) => y[1] - x[1]),
    totalMs: uses.reduce((n, u) => n + u.totalMs, 0),
    calls,
  };
}

/** The hypervisor's share when it took any (a virtual machine whose host is busy runs slower for it, in every row). */
function stealText(use: Pick<CpuUse, 'stealShare'>): string {
  return use.stealShare >= 0.005 ? ` and ${(use.stealShare * 100).toFixed(0)} % stolen by the host` : '';
}

/**
 * One line for a bench note: CPU ms per operation by process (the ones above 2 % of the total), the machine's busy
 * share, and the rate at which this much CPU per operation fills every core.
 */
export function cpuNote(use: CpuUse, ops: number): { perOpMs: number; cpuBoundRate: number; text: string } {
  const perOpMs = use.totalMs / Math.max(1, ops);
  const cpuBoundRate = (use.cores * 1000) / Math.max(1e-9, perOpMs);
  const shown = use.byLabel.filter(([, ms]) => ms >= use.totalMs * 0.02);
  const parts = shown.map(([name, ms]) => `${name} ${(ms / Math.max(1, ops)).toFixed(2)}`);
  // The same processes' read and write system calls per operation (reads/writes), where they made any.
  const io = shown.flatMap(([name]) => {
    const c = use.calls.get(name);
    return c && c.reads + c.writes > 0
      ? [`${name} ${(c.reads / Math.max(1, ops)).toFixed(2)}/${(c.writes / Math.max(1, ops)).toFixed(2)}`]
      : [];
  });
  const text = `${perOpMs.toFixed(2)} CPU ms per operation (${parts.join(', ')}); read/write system calls per operation (${io.join(', ')}); machine ${(use.busyShare * 100).toFixed(0)} % busy of ${use.cores} cores${stealText(use)}; ${use.cores} cores at this cost: ${cpuBoundRate.toFixed(0)}/s`;
  return { perOpMs, cpuBoundRate, text };
}

/** A CpuRun that reads the CPU around one more run, logs it per operation and hands it to `keep`. */
export const cpuAround =
  (
    what: string,
    label: (pid: number, comm: string) => string,
    keep: (cpu: ReturnType<typeof cpuNote>) => void,
  ): CpuRun =>
  async (run) => {
    const before = cpuSnapshot();
    const ops = await run();
    const cpu = cpuNote(cpuBetween(before, cpuSnapshot(), label), ops);
    keep(cpu);
    log(`CPU per ${what}: ${cpu.text}`);
  };
