import { spawn } from 'node:child_process';
import { freePort } from './ports';
import { serverProcess } from './server-process';

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
  const server = serverProcess(port, () => spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' }));
  await server.start();
  return { url: `redis://127.0.0.1:${port}`, port, stop: () => server.stop(true), start: server.start };
}
