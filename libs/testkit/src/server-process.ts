import type { ChildProcess } from 'node:child_process';
import { trackChild } from './children';
import { waitPort } from './ports';

export interface ServerProcess {
  /** Spawns the server and resolves once it accepts connections on its port. */
  start(): Promise<void>;
  /** SIGTERM (SIGKILL after 10 s), or SIGKILL at once with `hard`; returns at once when it is not running. */
  stop(hard?: boolean): Promise<void>;
  /** Sends a signal to the running server (SIGHUP: nats-server reloads its configuration). */
  signal(sig: NodeJS.Signals): void;
}

/** A local server process (nats-server, redis-server) that tests stop and start again on the same port. */
export function serverProcess(port: number, spawnIt: () => ChildProcess, leaves?: string): ServerProcess {
  let child: ChildProcess | undefined;
  return {
    async start() {
      child = spawnIt();
      trackChild(child, leaves);
      await waitPort(port);
    },
    signal(sig) {
      if (!child || child.exitCode !== null || child.signalCode !== null) throw new Error('the server is not running');
      child.kill(sig);
    },
    async stop(hard = false) {
      const c = child;
      // A process ended by a signal has exitCode null and signalCode set: both mean it is gone (waiting for its
      // 'exit' would wait for ever).
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      await new Promise<void>((r) => {
        c.once('exit', () => r());
        c.kill(hard ? 'SIGKILL' : 'SIGTERM');
        // A clustered JetStream server can wait a long time on SIGTERM for peers that are gone: bounded.
        if (!hard) setTimeout(() => c.kill('SIGKILL'), 10_000).unref();
      });
    },
  };
}
