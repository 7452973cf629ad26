import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { trackChild } from './children';
import { repoRoot } from './infra';
import { freePort, waitPort } from './ports';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function tail(file: string, lines: number): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

export function ferretBinary(): string | undefined {
  for (const c of [process.env.FERRETDB_BIN, join(repoRoot, '.infra', 'bin', 'ferretdb')])
    if (c && existsSync(c)) return c;
  return undefined;
}

export function pgBin(): string | undefined {
  try {
    const dir = execFileSync('bash', ['-c', 'ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1'], {
      encoding: 'utf8',
    }).trim();
    return dir && existsSync(join(dir, 'initdb')) ? dir : undefined;
  } catch {
    return undefined;
  }
}

export interface PrivateDatabase {
  url: string;
  /** Stops PostgreSQL (immediate: like a crash) and FerretDB, waits, starts both again. */
  restart(downMs: number, end: () => void): Promise<void>;
  /** The last lines of FerretDB's and PostgreSQL's logs (for a fault that went wrong). */
  logTail(lines?: number): string;
  destroy(): void;
}

/**
 * A PostgreSQL and a FerretDB of this run only, on ports of their own (and a debug port of its own), in a temporary
 * folder: restarting them harms nobody. The shared infrastructure is never stopped.
 */
export async function privateDatabase(opts: { log?: (line: string) => void } = {}): Promise<PrivateDatabase> {
  const ferret = ferretBinary();
  const pg = pgBin();
  if (!ferret || !pg)
    throw new Error(`needs ${!ferret ? 'the ferretdb binary (scripts/infra.sh up builds it)' : 'PostgreSQL (initdb)'}`);
  const root = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'chaos-db-'));
  const data = join(dir, 'pg');
  const sock = join(dir, 'sock');
  mkdirSync(data);
  mkdirSync(sock);
  if (root) {
    execFileSync('bash', ['-c', 'id postgres >/dev/null 2>&1 || useradd -r -m postgres']);
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    for (const d of [dir, data, sock]) chownSync(d, uid, -1);
  }
  const sh = (cmd: string) =>
    execFileSync(root ? 'su' : 'bash', root ? ['postgres', '-s', '/bin/bash', '-c', cmd] : ['-c', cmd], {
      stdio: ['ignore', 'ignore', 'pipe'],
      timeout: 60_000,
    });
  const pgPort = await freePort();
  const port = await freePort();
  const debugPort = await freePort();
  sh(`${pg}/initdb -D '${data}' -U postgres --auth=trust -E UTF8`);
  const pgStart = () =>
    sh(
      `${pg}/pg_ctl -D '${data}' -l '${dir}/postgres.log' -w -t 30 -o "-p ${pgPort} -k ${sock} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start`,
    );
  const pgStop = () => sh(`${pg}/pg_ctl -D '${data}' -m immediate -w -t 30 stop`);
  pgStart();
  sh(`${pg}/psql -h 127.0.0.1 -p ${pgPort} -U postgres -qc 'CREATE DATABASE ferretdb'`);
  let child: ChildProcess | undefined;
  const ferretLog = join(dir, 'ferretdb.log');
  const out = openSync(ferretLog, 'a');
  const ferretStart = async () => {
    child = spawn(
      ferret,
      [
        '--handler=postgresql',
        `--postgresql-url=postgres://postgres@127.0.0.1:${pgPort}/ferretdb?pool_max_conns=60`,
        `--listen-addr=127.0.0.1:${port}`,
        `--debug-addr=127.0.0.1:${debugPort}`,
        '--telemetry=disable',
        '--log-level=warn',
        `--state-dir=${dir}`,
      ],
      { stdio: ['ignore', out, out] },
    );
    trackChild(child);
    const started = child;
    // This FerretDB's own liveness (its debug listener), then its port: a port that merely accepts could be another
    // socket that took the number while FerretDB was down, and a FerretDB that cannot listen exits.
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (started.exitCode !== null || started.signalCode !== null)
        throw new Error(
          `FerretDB exited at start (${started.exitCode ?? started.signalCode}); its log: ${tail(ferretLog, 20)}`,
        );
      const live = await fetch(`http://127.0.0.1:${debugPort}/debug/livez`).then(
        (r) => r.ok,
        () => false,
      );
      if (live) break;
      if (Date.now() > deadline) throw new Error(`FerretDB did not come up in 30 s; its log: ${tail(ferretLog, 20)}`);
      await sleep(50);
    }
    await waitPort(port, 30_000);
  };
  const ferretStop = async () => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    await new Promise<void>((r) => (c.once('exit', () => r()), c.kill('SIGKILL')));
  };
  await ferretStart();
  opts.log?.(`private database: PostgreSQL on ${pgPort}, FerretDB on ${port} (${dir})`);
  return {
    url: `mongodb://127.0.0.1:${port}/`,
    async restart(downMs, end) {
      await ferretStop();
      pgStop();
      await sleep(downMs);
      pgStart();
      await ferretStart();
      end();
    },
    logTail(lines = 20) {
      return `FerretDB: ${tail(ferretLog, lines)}\nPostgreSQL: ${tail(join(dir, 'postgres.log'), lines)}`;
    },
    destroy() {
      child?.kill('SIGKILL');
      closeSync(out);
      try {
        pgStop();
      } catch {
        /* not running */
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
