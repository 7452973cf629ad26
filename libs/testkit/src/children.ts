import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './infra';

/**
 * Every process a test run starts is recorded with the pid of the run that owns it. A run that dies without its
 * teardown (killed jest, failed global setup) leaves them behind; the next run's setup stops them.
 */
const dir = join(repoRoot, '.infra', 'run', 'children');

/** Whether a process with this pid is running. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** `leaves`: a directory the process writes (a NATS server's store), removed too when the process is reaped. */
export function trackChild(child: ChildProcess, leaves?: string): void {
  if (!child.pid) return;
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${child.pid}.json`);
  writeFileSync(file, JSON.stringify({ pid: child.pid, owner: process.pid, ...(leaves ? { leaves } : {}) }));
  child.once('exit', () => rmSync(file, { force: true }));
}

/** Stops processes whose owning run is gone. */
export function reapOrphans(): number {
  let reaped = 0;
  let files: string[] = [];
  try {
    files = readdirSync(dir);
  } catch {
    return 0;
  }
  for (const f of files) {
    const file = join(dir, f);
    try {
      const { pid, owner, leaves } = JSON.parse(readFileSync(file, 'utf8')) as {
        pid: number;
        owner: number;
        leaves?: string;
      };
      if (!processAlive(owner) && processAlive(pid)) {
        process.kill(pid, 'SIGKILL');
        reaped++;
      }
      if (!processAlive(owner)) {
        if (leaves) rmSync(leaves, { recursive: true, force: true });
        rmSync(file, { force: true });
      }
    } catch {
      rmSync(file, { force: true });
    }
  }
  return reaped;
}
