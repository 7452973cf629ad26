import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { trackChild } from './children';
import { connect, type NatsConnection } from 'nats';
import { healthSubject } from '@platform/contracts';
import { randomSecret } from '@platform/secrets';
import { repoRoot, type InfraEnv } from './infra';

export const ALL_SERVICES = [
  'management',
  'run-auth',
  'events-ingest',
  'analytics',
  'evals',
  'chatapp',
  'credential-gateway',
  'webhook-dispatcher',
] as const;

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface StackOptions {
  infra: InfraEnv;
  /** Extra env for every process (secrets, prefixes, feature flags). */
  env?: Record<string, string>;
  /** Per-service extra env. */
  serviceEnv?: Partial<Record<string, Record<string, string>>>;
  services?: readonly string[];
  replicas?: Partial<Record<string, number>>;
  gatewayPort?: number;
  /** Folder for one log file per process. */
  logDir: string;
  withGateway?: boolean;
}

export interface ServiceProcess {
  name: string;
  index: number;
  child: ChildProcess;
  exited: Promise<number | null>;
}

export interface Stack {
  gatewayUrl: string;
  env: Record<string, string>;
  processes: ServiceProcess[];
  /** Starts one more process of a service and waits until it answers health. */
  startProcess(name: string): Promise<ServiceProcess>;
  kill(proc: ServiceProcess, signal?: NodeJS.Signals): Promise<void>;
  waitReady(names?: readonly string[]): Promise<void>;
  stop(): Promise<void>;
}

/** Secrets for a development or test stack (never used in production). */
export function localSecrets(): Record<string, string> {
  return {
    ADMIN_TOKEN: `adm_${randomSecret(32)}`,
    TOKEN_PEPPER: randomSecret(32),
    ENCRYPTION_KEY: randomSecret(32),
    SIGNING_KEY_SEED: randomSecret(32),
  };
}

/** STACK_READY_TIMEOUT_MS: more time for processes to become ready on a loaded machine (a slow shared database). */
function readyTimeoutMs(def: number): number {
  return Math.max(def, Number(process.env.STACK_READY_TIMEOUT_MS ?? 0));
}

function mainOf(name: string) {
  return join(repoRoot, 'services', name, 'dist', 'main.js');
}

/** Starts every service (and the gateway) as real processes from their built bundles. */
export async function startStack(opts: StackOptions): Promise<Stack> {
  mkdirSync(opts.logDir, { recursive: true });
  const gatewayPort = opts.gatewayPort ?? (await freePort());
  const env: Record<string, string> = {
    ...opts.infra,
    GATEWAY_PORT: String(gatewayPort),
    ...opts.env,
  };
  const processes: ServiceProcess[] = [];
  const logs: WriteStream[] = [];
  const counters = new Map<string, number>();

  const spawnOne = (name: string): ServiceProcess => {
    const index = counters.get(name) ?? 0;
    counters.set(name, index + 1);
    const log = createWriteStream(join(opts.logDir, `${name}${index ? `-${index}` : ''}.log`), { flags: 'a' });
    logs.push(log);
    const child = spawn(process.execPath, ['--enable-source-maps', mainOf(name)], {
      env: { ...process.env, ...env, ...(opts.serviceEnv?.[name] ?? {}), SERVICE_NAME: name },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    trackChild(child);
    child.stdout!.pipe(log, { end: false });
    child.stderr!.pipe(log, { end: false });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const proc = { name, index, child, exited };
    processes.push(proc);
    return proc;
  };

  const nc: NatsConnection = await connect({ servers: opts.infra.NATS_URL, name: 'stack-launcher' });

  const serviceReady = async (name: string, deadline: number) => {
    for (;;) {
      try {
        const m = await nc.request(healthSubject(name), new TextEncoder().encode('{}'), { timeout: 1000 });
        const body = JSON.parse(new TextDecoder().decode(m.data)) as { ok: boolean; body?: { ready?: boolean } };
        if (body.ok && body.body?.ready) return;
      } catch {
        /* not up yet */
      }
      if (Date.now() > deadline) throw new Error(`${name} did not become ready (see ${opts.logDir}/${name}.log)`);
      await new Promise((r) => setTimeout(r, 150));
    }
  };

  const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
  const gatewayReady = async (deadline: number) => {
    for (;;) {
      try {
        const res = await fetch(`${gatewayUrl}/readyz`);
        if (res.ok) return;
      } catch {
        /* not up yet */
      }
      if (Date.now() > deadline) throw new Error(`gateway did not become ready (see ${opts.logDir}/gateway.log)`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  const services = opts.services ?? ALL_SERVICES;
  for (const name of services) for (let i = 0; i < (opts.replicas?.[name] ?? 1); i++) spawnOne(name);
  if (opts.withGateway !== false) spawnOne('gateway');

  const waitReady = async (names: readonly string[] = services) => {
    const deadline = Date.now() + readyTimeoutMs(60_000);
    await Promise.all([...names.map((n) => serviceReady(n, deadline)), ...(opts.withGateway !== false ? [gatewayReady(deadline)] : [])]);
  };
  try {
    await waitReady();
  } catch (err) {
    for (const p of processes) p.child.kill('SIGKILL');
    await nc.close();
    throw err;
  }

  return {
    gatewayUrl,
    env,
    processes,
    async startProcess(name) {
      const p = spawnOne(name);
      if (name === 'gateway') await gatewayReady(Date.now() + readyTimeoutMs(30_000));
      else await serviceReady(name, Date.now() + readyTimeoutMs(30_000));
      return p;
    },
    async kill(proc, signal = 'SIGKILL') {
      proc.child.kill(signal);
      await proc.exited;
      processes.splice(processes.indexOf(proc), 1);
    },
    waitReady,
    async stop() {
      await Promise.all(
        processes.map(async (p) => {
          p.child.kill('SIGTERM');
          const t = setTimeout(() => p.child.kill('SIGKILL'), 15_000);
          await p.exited;
          clearTimeout(t);
        }),
      );
      for (const l of logs) l.end();
      await nc.close();
    },
  };
}
