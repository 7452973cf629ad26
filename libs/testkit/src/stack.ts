import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { freePort } from './ports';
import { join } from 'node:path';
import { trackChild } from './children';
import type { NatsConnection } from 'nats';
import { connectAs, natsCredsFile } from './nats-auth';
import { ServiceBus } from '@platform/bus';
import { BACKEND_SERVICES, healthCallOf, type BackendServiceName, type ServiceName } from '@platform/contracts';
import { randomSecret } from '@platform/secrets';
import { repoRoot, type InfraEnv } from './infra';

/** Every service behind the gateway, in start order (libs/contracts/src/services.ts). */
export const ALL_SERVICES = BACKEND_SERVICES;

export interface StackOptions {
  infra: InfraEnv;
  /** Extra env for every process (secrets, prefixes, feature flags). */
  env?: Record<string, string>;
  /** Per-service extra env. */
  serviceEnv?: Partial<Record<ServiceName, Record<string, string>>>;
  /** The services to start (default ALL_SERVICES). */
  services?: readonly BackendServiceName[];
  replicas?: Partial<Record<ServiceName, number>>;
  gatewayPort?: number;
  /** Folder for one log file per process. */
  logDir: string;
  withGateway?: boolean;
  /** Node flags of every process (default `--enable-source-maps`; the benchmark runs them with the production image's NODE_OPTIONS). */
  nodeArgs?: string[];
  /** Extra node flags of one service's processes (for example `--cpu-prof`, which NODE_OPTIONS does not accept). */
  serviceNodeArgs?: Partial<Record<ServiceName, string[]>>;
  /**
   * Give every process its own HEALTH_PORT (health, readiness and /metrics), exposed as `healthUrl`: free ports, or
   * with `{ base }` consecutive ports from `base` in start order (services in ALL_SERVICES order, then the gateway).
   */
  healthPorts?: boolean | { base: number };
}

export interface ServiceProcess {
  name: ServiceName;
  index: number;
  child: ChildProcess;
  exited: Promise<number | null>;
  /** With `healthPorts`: base URL of the process's health listener (/healthz, /readyz, /metrics). */
  healthUrl?: string;
  /** Gateways: base URL of this gateway's main listener (each gateway replica listens on its own port). */
  url?: string;
  /** Path of the process's log file. */
  logFile: string;
}

export interface Stack {
  gatewayUrl: string;
  env: Record<string, string>;
  processes: ServiceProcess[];
  /** Starts one more process of a service and waits until it answers health. */
  startProcess(name: ServiceName): Promise<ServiceProcess>;
  kill(proc: ServiceProcess, signal?: NodeJS.Signals): Promise<void>;
  waitReady(names?: readonly BackendServiceName[]): Promise<void>;
  stop(): Promise<void>;
}

/** Secrets for a development or test stack (never used in production). */
export function localSecrets(): Record<string, string> {
  return {
    ADMIN_TOKEN: `adm_${randomSecret(32)}`,
    TOKEN_PEPPER: randomSecret(32),
    // One sealing key (a list of one: docs/security.md, "Sealed values").
    ENCRYPTION_KEYS: randomSecret(32),
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
    // Every listener of a stack gets a port of its own, so stacks can run side by side.
    ANALYTICS_PORT: String(await freePort()),
    ...opts.env,
  };
  const processes: ServiceProcess[] = [];
  const logs: WriteStream[] = [];
  const counters = new Map<string, number>();
  let spawned = 0;

  const spawnOne = async (name: ServiceName): Promise<ServiceProcess> => {
    const index = counters.get(name) ?? 0;
    counters.set(name, index + 1);
    const logFile = join(opts.logDir, `${name}${index ? `-${index}` : ''}.log`);
    const log = createWriteStream(logFile, { flags: 'a' });
    logs.push(log);
    const own: Record<string, string> = {};
    let healthUrl: string | undefined;
    let url: string | undefined;
    const order = spawned++;
    if (opts.healthPorts) {
      own.HEALTH_PORT = String(typeof opts.healthPorts === 'object' ? opts.healthPorts.base + order : await freePort());
      healthUrl = `http://127.0.0.1:${own.HEALTH_PORT}`;
    }
    if (name === 'gateway') {
      // The first gateway takes the stack's port; further replicas their own (a load balancer would sit in front).
      // (their analytics listener on any free port: two processes cannot share one).
      if (index > 0) {
        own.GATEWAY_PORT = String(await freePort());
        own.ANALYTICS_PORT = '0';
      }
      url = `http://127.0.0.1:${own.GATEWAY_PORT ?? env.GATEWAY_PORT}`;
    }
    const child = spawn(
      process.execPath,
      [...(opts.nodeArgs ?? ['--enable-source-maps']), ...(opts.serviceNodeArgs?.[name] ?? []), mainOf(name)],
      {
        // Each process connects to NATS as its own identity (its permissions come from deploy/nats/permissions.json).
        env: {
          ...process.env,
          NATS_CREDS: natsCredsFile(name),
          ...env,
          ...(opts.serviceEnv?.[name] ?? {}),
          ...own,
          SERVICE_NAME: name,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    trackChild(child);
    child.stdout!.pipe(log, { end: false });
    child.stderr!.pipe(log, { end: false });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const proc: ServiceProcess = { name, index, child, exited, healthUrl, url, logFile };
    processes.push(proc);
    return proc;
  };

  const nc: NatsConnection = await connectAs(opts.infra.NATS_URL, 'admin', { name: 'stack-launcher' });

  // The launcher asks each service's health call as the gateway would.
  const launcher = new ServiceBus(nc, 'stack-launcher', 1000);
  const serviceReady = async (name: BackendServiceName, deadline: number) => {
    for (;;) {
      try {
        if ((await launcher.callInternal(healthCallOf(name), {}, { timeoutMs: 1000 })).ready) return;
      } catch {
        /* not up yet */
      }
      if (Date.now() > deadline) throw new Error(`${name} did not become ready (see ${opts.logDir}/${name}.log)`);
      await new Promise((r) => setTimeout(r, 150));
    }
  };

  const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
  const gatewayReady = async (deadline: number, base = gatewayUrl) => {
    for (;;) {
      try {
        const res = await fetch(`${base}/readyz`);
        if (res.ok) return;
      } catch {
        /* not up yet */
      }
      if (Date.now() > deadline) throw new Error(`gateway did not become ready (see ${opts.logDir}/gateway.log)`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  const services = opts.services ?? ALL_SERVICES;
  for (const name of services) for (let i = 0; i < (opts.replicas?.[name] ?? 1); i++) await spawnOne(name);
  if (opts.withGateway !== false) for (let i = 0; i < (opts.replicas?.gateway ?? 1); i++) await spawnOne('gateway');

  const waitReady = async (names: readonly BackendServiceName[] = services) => {
    const deadline = Date.now() + readyTimeoutMs(60_000);
    const gateways = processes.filter((p) => p.name === 'gateway');
    await Promise.all([
      ...names.map((n) => serviceReady(n, deadline)),
      ...gateways.map((g) => gatewayReady(deadline, g.url)),
    ]);
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
      const p = await spawnOne(name);
      if (name === 'gateway') await gatewayReady(Date.now() + readyTimeoutMs(60_000), p.url);
      else await serviceReady(name, Date.now() + readyTimeoutMs(60_000));
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
      // Bounded: the launcher's connection may be reconnecting to a server that is gone.
      await Promise.race([nc.close().catch(() => undefined), new Promise((r) => setTimeout(r, 5_000).unref())]);
    },
  };
}
