import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bodyOf, readReply } from '@platform/bus';
import { freePort } from './ports';
import { connectAs, natsServerBin, natsServerConfig } from './nats-auth';
import { serverProcess } from './server-process';

export interface NatsServer {
  url: string;
  port: number;
  storeDir: string;
  /** Stops the server (SIGTERM, or SIGKILL with `hard`). */
  stop(hard?: boolean): Promise<void>;
  /** Starts it again on the same port and store (after stop). */
  start(): Promise<void>;
  /** Reloads its configuration (SIGHUP), as an operator does after a revocation. */
  reload(): void;
  /** Stops the server for good and removes its store (also when stopping fails). */
  destroy(hard?: boolean): Promise<void>;
}

/** A private nats-server with JetStream for one test run (so parallel runs never share queue groups). */
export async function startNatsServer(
  opts: {
    port?: number;
    args?: string[] /** Server configuration (default: the checkout's, with authentication). */;
    config?: string;
  } = {},
): Promise<NatsServer> {
  try {
    execFileSync(natsServerBin(), ['--version'], { stdio: 'ignore' });
  } catch {
    throw new Error('nats-server is not installed: run scripts/infra.sh up first');
  }
  const port = opts.port ?? (await freePort());
  const storeDir = mkdtempSync(join(tmpdir(), 'nats-js-'));
  const server = serverProcess(
    port,
    () =>
      spawn(
        natsServerBin(),
        [
          '-c',
          opts.config ?? natsServerConfig(),
          '-js',
          '-sd',
          storeDir,
          '-a',
          '127.0.0.1',
          '-p',
          String(port),
          ...(opts.args ?? []),
        ],
        { stdio: 'ignore' },
      ),
    storeDir,
  );
  await server.start();
  const destroy = async (hard?: boolean) => {
    try {
      await server.stop(hard);
    } finally {
      rmSync(storeDir, { recursive: true, force: true });
    }
  };
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    stop: server.stop,
    start: server.start,
    reload: () => server.signal('SIGHUP'),
    destroy,
  };
}

/**
 * Sends one internal request (the `{principal, body}` wire of an internal call) on a subject and returns the reply
 * decoded (`{ok, status, body}` or `{ok:false, problem}`), for tests of internal subjects.
 */
export async function requestSubject<T = any>(
  natsUrl: string,
  subject: string,
  body: unknown,
  timeoutMs = 10_000,
  identity = 'admin',
): Promise<T> {
  const nc = await connectAs(natsUrl, identity, { name: 'test-request', maxReconnectAttempts: 0 });
  try {
    const msg = await nc.request(
      subject,
      new TextEncoder().encode(JSON.stringify({ principal: { kind: 'anonymous' }, body })),
      { timeout: timeoutMs },
    );
    const reply = readReply(msg);
    return (reply.ok ? { ok: true, status: reply.status, body: bodyOf(reply), headers: reply.headers } : reply) as T;
  } finally {
    await nc.close();
  }
}
