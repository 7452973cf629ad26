import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports';
import { serverProcess } from './server-process';

const run = promisify(execFile);

export interface RedisServer {
  url: string;
  port: number;
  /** Kills the server: its data, kept in memory only, is lost; with `keepData`, written to disk first (SAVE). */
  stop(opts?: { keepData?: boolean }): Promise<void>;
  /** Starts it again on the same port: with what the last `stop({ keepData: true })` saved, else empty. */
  start(): Promise<void>;
}

/** A private, memory-only redis-server, for tests that stop Redis without touching the shared one. */
export async function startRedisServer(opts: { port?: number } = {}): Promise<RedisServer> {
  const port = opts.port ?? (await freePort());
  const url = `redis://127.0.0.1:${port}`;
  // A folder of its own for the snapshot a stop that keeps the data writes (no automatic snapshots).
  const dir = mkdtempSync(join(tmpdir(), 'redis-'));
  const dump = join(dir, 'dump.rdb');
  const server = serverProcess(
    port,
    () => (
      mkdirSync(dir, { recursive: true }),
      spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
        { stdio: 'ignore' },
      )
    ),
  );
  await server.start();
  return {
    url,
    port,
    async stop({ keepData = false } = {}) {
      rmSync(dump, { force: true });
      if (keepData) await run('redis-cli', ['-u', url, 'SAVE']);
      await server.stop(true);
      // Nothing kept: the folder goes (it is made again at the next start).
      if (!keepData) rmSync(dir, { recursive: true, force: true });
    },
    start: server.start,
  };
}

/** Every key of a Redis server whose name matches the glob `pattern` (redis-cli's SCAN: names as stored, key prefix included). */
export async function redisKeys(url: string, pattern: string): Promise<string[]> {
  const { stdout } = await run('redis-cli', ['-u', url, '--scan', '--pattern', pattern], {
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout.split('\n').filter(Boolean);
}
