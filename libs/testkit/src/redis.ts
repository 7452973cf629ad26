import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { freePort } from './ports';
import { serverProcess } from './server-process';

const run = promisify(execFile);

export interface RedisServer {
  url: string;
  port: number;
  /** Kills the server (its data, kept in memory only, is lost). */
  stop(): Promise<void>;
  /** Starts it again on the same port, empty. */
  start(): Promise<void>;
}

/** A private, memory-only redis-server, for tests that stop Redis without touching the shared one. */
export async function startRedisServer(opts: { port?: number } = {}): Promise<RedisServer> {
  const port = opts.port ?? (await freePort());
  const server = serverProcess(port, () =>
    spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
      stdio: 'ignore',
    }),
  );
  await server.start();
  return { url: `redis://127.0.0.1:${port}`, port, stop: () => server.stop(true), start: server.start };
}

/** Every key of a Redis server whose name matches the glob `pattern` (redis-cli's SCAN: names as stored, key prefix included). */
export async function redisKeys(url: string, pattern: string): Promise<string[]> {
  const { stdout } = await run('redis-cli', ['-u', url, '--scan', '--pattern', pattern], {
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout.split('\n').filter(Boolean);
}
