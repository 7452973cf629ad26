import { spawn, type ChildProcess } from 'node:child_process';
import { trackChild } from './children';
import { freePort, waitPort } from './ports';

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
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    trackChild(child);
    await waitPort(port);
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async stop() {
      const c = child;
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      await new Promise<void>((r) => {
        c.once('exit', () => r());
        c.kill('SIGKILL');
      });
    },
    start,
  };
}
