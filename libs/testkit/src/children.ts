import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './infra';

/**
 * Every process a test run starts is recorded with the pid of the run that owns it. A run that dies without its
 * teardown (killed jest, failed global setup) leaves them behind; the next run's setup stops them.
 */
const dir = join(repoRoot, '.infra', 'run', 'children');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export function trackChild(child: ChildProcess): void {
  if (!child.pid) return;
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${child.pid}.json`);
  writeFileSync(file, JSON.stringify({ pid: child.pid, owner: process.pid }));
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
      const { pid, owner } = JSON.parse(readFileSync(file, 'utf8')) as { pid: number; owner: number };
      if (!alive(owner) && alive(pid)) {
        process.kill(pid, 'SIGKILL');
        reaped++;
      }
      if (!alive(owner)) rmSync(file, { force: true });
    } catch {
      rmSync(file, { force: true });
    }
  }
  return reaped;
}
