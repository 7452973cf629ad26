// What the rows run against: the platform's services as the production image runs them, and a bare node:http server.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BackendServiceName } from '@platform/contracts';
import { connectAs, repoRoot, startPrivateStack, trackChild, type PrivateStack } from '@platform/testkit';
import { atTeardown } from './teardown';
import { dbPrefixOf, log, logDir, partitionOf, runId } from './run';
import type { BenchSettings } from './settings';

export const SERVICES: BackendServiceName[] = [
  'management',
  'run-auth',
  'events-ingest',
  'analytics',
  'webhook-dispatcher',
];

const dockerfile = () => readFileSync(join(repoRoot, 'deploy', 'Dockerfile'), 'utf8');

/**
 * The node flags of the production image: deploy/Dockerfile's `NODE_OPTIONS="…"` and the V8 flags its entrypoint puts
 * on node's command line (`NODE_V8_FLAGS="…"`, flags Node refuses in NODE_OPTIONS). BENCH_NODE_OPTIONS overrides both.
 */
export function productionNodeArgs(nodeOptions: string | undefined): string[] {
  if (nodeOptions !== undefined) return nodeOptions.split(/\s+/).filter(Boolean);
  const m = /NODE_OPTIONS="([^"]*)"/.exec(dockerfile());
  if (!m) throw new Error('deploy/Dockerfile sets no NODE_OPTIONS="…"');
  const v8 = /NODE_V8_FLAGS="([^"]*)"/.exec(dockerfile());
  return `${m[1]} ${v8?.[1] ?? ''}`.split(/\s+/).filter(Boolean);
}

/**
 * The environment the production image gives the C library of every process: deploy/Dockerfile's `MALLOC_ARENA_MAX=…`
 * (BENCH_STACK_ENV can set it otherwise).
 */
export function productionProcessEnv(): Record<string, string> {
  const m = /MALLOC_ARENA_MAX=(\d+)/.exec(dockerfile());
  return m ? { MALLOC_ARENA_MAX: m[1]! } : {};
}

/** The baseline: a bare node:http server answering {"ok":true}, in its own process. */
export async function startBaseline(): Promise<{ url: string; child: ChildProcess }> {
  const code = `const s=require('node:http').createServer((q,r)=>{r.writeHead(200,{'content-type':'application/json'});r.end('{"ok":true}')});s.listen(0,'127.0.0.1',()=>console.log(s.address().port))`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  trackChild(child);
  const port = await new Promise<number>((resolve) =>
    child.stdout!.once('data', (d: Buffer) => resolve(Number(String(d).trim()))),
  );
  return { url: `http://127.0.0.1:${port}/`, child };
}

/** Waits (at most `maxMs`) until every durable consumer of the event stream has caught up, so a backlog left by one
 * measurement does not load the next. Returns the seconds it took. */
export async function settle(natsUrl: string, maxMs = 120_000): Promise<number> {
  const t0 = Date.now();
  const nc = await connectAs(natsUrl, 'admin', { name: 'bench-settle' });
  try {
    const jsm = await nc.jetstreamManager();
    for (;;) {
      let behind = 0;
      for await (const c of jsm.consumers.list('PLATFORM_EVENTS')) behind += c.num_pending + c.num_ack_pending;
      if (behind === 0 || Date.now() - t0 > maxMs) {
        if (behind) log(`consumers still ${behind} messages behind after ${maxMs / 1000} s; going on`);
        return (Date.now() - t0) / 1000;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  } finally {
    await nc.close();
  }
}

/** Settles the stack's consumers and says how long that took. */
export const settled = async (natsUrl: string) => log(`settled in ${(await settle(natsUrl)).toFixed(1)} s`);

export interface BenchStack {
  stack: PrivateStack;
  /** Stops it now (else at the run's end). */
  done: () => Promise<void>;
}
export type StartBenchStack = (
  name: string,
  analyticsPort: number,
  serviceNodeArgs?: Record<string, string[]>,
  extraEnv?: Record<string, string>,
) => Promise<BenchStack>;

/**
 * Starts the services as the production image runs them, with a nats-server of their own; `name` sets their database
 * prefix, Redis key prefix and webhook partition apart from the other stacks' (the write-growth rows run two more).
 * A private stack: its stop (at the run's end, or at once through the returned `done`) stops its processes and its
 * nats-server, removes the server's store and drops its databases.
 */
export function benchStacks(
  infra: { REDIS_URL: string; MONGO_URL: string },
  secrets: Record<string, string>,
  settings: BenchSettings,
): StartBenchStack {
  return async (name, analyticsPort, serviceNodeArgs, extraEnv = {}) => {
    const own = await startPrivateStack({
      name: name || 'bench',
      infra: { REDIS_URL: infra.REDIS_URL, MONGO_URL: infra.MONGO_URL },
      secrets,
      dbPrefix: dbPrefixOf(name),
      keepDatabases: settings.keepData,
      services: SERVICES,
      logDir: name ? join(logDir, name) : logDir,
      // As the production image runs them: the node flags and C library settings of deploy/Dockerfile (BENCH_NODE_OPTIONS
      // and BENCH_STACK_ENV override them).
      nodeArgs: productionNodeArgs(settings.nodeOptions),
      env: { ...productionProcessEnv(), ...secrets, ...stackEnv(name, analyticsPort, settings), ...extraEnv },
      serviceNodeArgs,
      // /metrics of every process: database writes per delivered webhook and per ingested event.
      healthPorts: true,
    });
    return { stack: own, done: atTeardown(`stack ${name || 'main'}`, () => own.stop()) };
  };
}

/** The settings every service of a bench stack runs with. */
function stackEnv(name: string, analyticsPort: number, settings: BenchSettings): Record<string, string> {
  return {
    NODE_ENV: 'production',
    // Production requires a base URL or the hosts it answers for (the bench calls it by address).
    ALLOWED_HOSTS: '127.0.0.1,localhost',
    LOG_LEVEL: settings.logLevel,
    REDIS_KEY_PREFIX: name ? `bench:${runId}:${name}:` : `bench:${runId}:`,
    // The limits stay on (their Redis round trip is part of the path), set high enough never to answer 429.
    RATE_LIMIT_PER_IP: '1000000000',
    RATE_LIMIT_PER_CREDENTIAL: '1000000000',
    ALLOW_LOOPBACK_WEBHOOKS: 'true',
    WEBHOOK_PARTITION: partitionOf(name),
    ANALYTICS_PORT: String(analyticsPort),
    // A list of 100k rows takes longer than the default 10 s on FerretDB: report its time, not the gateway's 504.
    NATS_REQUEST_TIMEOUT_MS: '120000',
    ...settings.stackEnv,
  };
}
