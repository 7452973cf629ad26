import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { natsCredsFile } from './nats-auth';
import { trackChild } from './children';
import { repoRoot } from './infra';
import { freePort } from './ports';

export interface GatewayProcess {
  url: string;
  stop(): Promise<void>;
}

/**
 * One more gateway process (the built bundle) with the test stack's env plus `env` and its own port: it joins the
 * same NATS and Redis, so it reaches the same services and shares Redis-held state with the other gateways.
 */
export async function startGatewayProcess(
  baseEnv: Record<string, string>,
  env: Record<string, string> = {},
  logName = 'gateway-extra',
): Promise<GatewayProcess> {
  const port = await freePort();
  const log = createWriteStream(join(repoRoot, '.infra', `${logName}-${port}.log`), { flags: 'a' });
  const child = spawn(
    process.execPath,
    ['--enable-source-maps', join(repoRoot, 'services', 'gateway', 'dist', 'main.js')],
    {
      env: {
        ...process.env,
        ...baseEnv,
        NATS_CREDS: natsCredsFile('gateway'),
        ANALYTICS_PORT: String(await freePort()),
        ...env,
        GATEWAY_PORT: String(port),
        SERVICE_NAME: 'gateway',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  trackChild(child);
  child.stdout!.pipe(log, { end: false });
  child.stderr!.pipe(log, { end: false });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      if ((await fetch(`${url}/readyz`)).ok) break;
    } catch {
      /* not up yet */
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`extra gateway did not become ready (see .infra/${logName}-${port}.log)`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(t);
      }
      log.end();
    },
  };
}
