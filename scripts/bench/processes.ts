// The processes of a stack as the rows see them: their names, their resident memory, their /metrics.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, type Stack } from '@platform/testkit';
import type { MemoryRow } from './results';
import { logDir } from './run';
import { productionNodeArgs, productionProcessEnv } from './stacks';

export const procName = (p: Stack['processes'][number]) => (p.index ? `${p.name}#${p.index + 1}` : p.name);

/** Resident memory of a process, from /proc/<pid>/status. */
export function rssMb(pid: number | undefined): number {
  if (!pid) return NaN;
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** Names a process of `stack` (or of `others`, stacks idle beside it) by its service, the bench as the load generator,
 * else by its command name (postgres, ferretdb, nats-server, redis-server): what the CPU notes call it. */
export function cpuLabel(stack: Stack, others: Stack[] = []) {
  const byPid = new Map(stack.processes.map((p) => [p.child.pid, procName(p)]));
  for (const p of others.flatMap((o) => o.processes)) byPid.set(p.child.pid, `${procName(p)} (another stack)`);
  return (pid: number, comm: string) => byPid.get(pid) ?? (pid === process.pid ? 'load generator' : comm);
}

/** The health (and /metrics) URLs of a service's processes. */
export const healthUrlsOf = (stack: Stack, name: string) =>
  stack.processes.filter((p) => p.name === name && p.healthUrl).map((p) => p.healthUrl!);

/** Each process's resident memory: idle (sampled once, after start) and the highest seen under load. */
export class MemoryWatch {
  private readonly memory = new Map<string, { idle: number; load: number }>();

  /** Idle RSS of the processes not sampled yet (a replica started later is sampled once it has settled). */
  sampleIdle(stack: Stack) {
    for (const p of stack.processes) {
      const m = this.memory.get(procName(p));
      if (!m || Number.isNaN(m.idle)) this.memory.set(procName(p), { idle: rssMb(p.child.pid), load: m?.load ?? 0 });
    }
  }

  /** While `fn` runs, the highest RSS of each process is recorded as its under-load figure. */
  async underLoad<T>(stack: Stack, fn: () => Promise<T>): Promise<T> {
    const t = setInterval(() => {
      for (const p of stack.processes) {
        const m = this.memory.get(procName(p)) ?? { idle: NaN, load: 0 };
        m.load = Math.max(m.load, rssMb(p.child.pid) || 0);
        this.memory.set(procName(p), m);
      }
    }, 250);
    try {
      return await fn();
    } finally {
      clearInterval(t);
    }
  }

  rows(): MemoryRow[] {
    return [...this.memory.entries()].map(([name, m]) => ({
      name,
      idleMb: Math.round(m.idle),
      loadMb: Math.round(m.load),
    }));
  }
}

/**
 * The floor under a service's idle RSS, with the production node flags: node with nothing loaded, and node with only
 * the libraries every service is built on (mongoose with the MongoDB driver, nats, express, ioredis) loaded.
 */
export async function memoryFloor(nodeOptions: string | undefined): Promise<Array<{ name: string; idleMb: number }>> {
  // Each library from a package that depends on it (pnpm links a package's dependencies into its own node_modules).
  const owners = { mongoose: 'libs/mongo', nats: 'libs/bus', express: 'services/gateway', ioredis: 'libs/runtime' };
  const loads = Object.entries(owners).map(
    ([lib, dir]) =>
      `require('node:module').createRequire(${JSON.stringify(join(repoRoot, dir, 'package.json'))})(${JSON.stringify(lib)})`,
  );
  const libs = `globalThis.k=[${loads.join(',')}];`;
  const out: Array<{ name: string; idleMb: number }> = [];
  for (const [name, code] of [
    ['floor: node alone', ''],
    ['floor: node + mongoose, nats, express, ioredis (no code of ours)', libs],
  ] as const) {
    const child = spawn(
      process.execPath,
      [
        ...productionNodeArgs(nodeOptions),
        '-e',
        `${code}setTimeout(()=>console.log('ready'),1500);setTimeout(()=>{},60000)`,
      ],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { ...process.env, ...productionProcessEnv() },
      },
    );
    await new Promise((resolve, reject) => {
      child.stdout!.once('data', resolve);
      child.once('exit', (code) =>
        reject(new Error(`the process of the row "${name}" exited (${code}) before it was ready`)),
      );
    });
    out.push({ name, idleMb: Math.round(rssMb(child.pid)) });
    child.kill();
  }
  return out;
}

/** BENCH_DUMP_METRICS=1: every process's /metrics into the run's log directory (`<stage>-<process>.txt`), to read
 * what happened inside a row (the half-max row's latency by hop, its group-commit sizes and times). */
export async function dumpMetrics(stack: Stack, stage: string) {
  for (const p of stack.processes)
    if (p.healthUrl)
      writeFileSync(join(logDir, `${stage}-${procName(p)}.txt`), await (await fetch(`${p.healthUrl}/metrics`)).text());
}
