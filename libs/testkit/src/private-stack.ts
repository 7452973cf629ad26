import { join } from 'node:path';
import type { ServiceName } from '@platform/contracts';
import { randomId } from '@platform/secrets';
import { dropDatabases } from './db';
import { client, type Client } from './http';
import { ensureInfra, repoRoot, type InfraEnv } from './infra';
import { startNatsServer, type NatsServer } from './nats';
import { startRedisServer, type RedisServer } from './redis';
import { localSecrets, startStack, type ServiceProcess, type Stack, type StackOptions } from './stack';

export interface PrivateStackOptions extends Omit<StackOptions, 'infra' | 'logDir'> {
  /** Short name: the log folder, the database prefix, the Redis key prefix and the webhook partition derive from it. */
  name: string;
  /**
   * NATS: `private` (default) starts a nats-server of the stack's own, so queue groups and durable consumers are never
   * shared and the server can be stopped; `shared` uses the one of scripts/infra.sh. `infra.NATS_URL` wins over both.
   */
  nats?: 'private' | 'shared';
  /** A private memory-only redis-server: for every process (`true`) or only for the ones named (service or `gateway`). */
  privateRedis?: boolean | readonly ServiceName[];
  /** Overrides of the shared servers (another database, a NATS cluster). */
  infra?: Partial<InfraEnv>;
  /** Secrets of the stack (default: fresh ones from `localSecrets()`). */
  secrets?: Record<string, string>;
  /** Database prefix (default `<name><run id>`, unique to this stack). */
  dbPrefix?: string;
  /** Keep the databases at stop (the development stack's data). Otherwise they are dropped, unless TEST_KEEP_DB is set. */
  keepDatabases?: boolean;
  /** Log folder (default `.infra/test-logs/<name>-<run id>`). */
  logDir?: string;
}

export interface PrivateStack extends Stack {
  /** The stack's own run id (in its prefixes and log folder). */
  runId: string;
  dbPrefix: string;
  logDir: string;
  secrets: Record<string, string>;
  adminToken: string;
  /** A client of the stack's gateway with the platform admin credential. */
  admin: Client;
  /** Base URL of the gateway's analytics listener. */
  analyticsUrl: string;
  natsUrl: string;
  /** The private nats-server (absent with `nats: 'shared'` or a given NATS_URL). */
  nats?: NatsServer;
  /** The private redis-server (with `privateRedis`). */
  redis?: RedisServer;
  /** The first running process of a service. */
  process(name: ServiceName): ServiceProcess;
  /** Every running process of a service. */
  replicas(name: ServiceName): ServiceProcess[];
  /** Runs `fn` at stop, before the servers go (fakes, receivers the stack's processes talk to). */
  onStop(fn: () => unknown): void;
  /** Stops the processes, runs the `onStop` callbacks, stops its private servers and drops its databases. Idempotent. */
  stop(): Promise<void>;
}

const bounded = <T>(ms: number, p: Promise<T>) =>
  Promise.race([p, new Promise<void>((r) => setTimeout(r, ms).unref())]);

/**
 * A stack of its own beside the shared test stack (or for a script): its processes can be killed, its servers
 * stopped and its settings changed without touching anything else. Everything it starts it stops, and the databases it
 * made it drops, also when starting fails.
 */
export async function startPrivateStack(opts: PrivateStackOptions): Promise<PrivateStack> {
  const {
    name,
    nats: natsMode,
    privateRedis,
    infra: infraOverrides,
    secrets: givenSecrets,
    dbPrefix: givenPrefix,
    keepDatabases,
    logDir: givenLogDir,
    ...stackOptions
  } = opts;
  const slug = name.toLowerCase().replace(/[^a-z0-9]/g, '');
  const runId = `${Date.now().toString(36)}${randomId(4).toLowerCase()}`;
  const dbPrefix = givenPrefix ?? `${slug}${runId}`;
  const logDir = givenLogDir ?? join(repoRoot, '.infra', 'test-logs', `${name}-${runId}`);
  const secrets = givenSecrets ?? localSecrets();
  const cleanups: Array<() => unknown> = [];
  let nats: NatsServer | undefined;
  let redis: RedisServer | undefined;
  let stack: Stack | undefined;
  let stopped: Promise<void> | undefined;

  let mongoUrl: string | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      const failures: string[] = [];
      const step = async (what: string, fn: () => unknown) => {
        try {
          await fn();
        } catch (err) {
          failures.push(`${what}: ${(err as Error).message ?? err}`);
        }
      };
      // Past the bound, the processes are killed outright (a process may hang on a server that is gone).
      if (stack) {
        const st = stack;
        await step('stop the processes', async () => {
          await bounded(60_000, st.stop());
          for (const p of st.processes) p.child.kill('SIGKILL');
        });
      }
      for (const fn of cleanups.reverse()) await step('an onStop callback', fn);
      if (redis) await step('stop redis', () => redis!.stop());
      if (nats) {
        const n = nats;
        await step('stop nats', () => n.destroy());
      }
      const url = mongoUrl;
      if (url && !keepDatabases && !process.env.TEST_KEEP_DB)
        await step(`drop ${dbPrefix}_*`, () => bounded(60_000, dropDatabases(url, dbPrefix)));
      if (failures.length) process.stderr.write(`[private stack ${name}] cleanup: ${failures.join('; ')}\n`);
    })());

  try {
    const shared =
      infraOverrides?.NATS_URL && infraOverrides.REDIS_URL && infraOverrides.MONGO_URL
        ? (infraOverrides as InfraEnv)
        : { ...ensureInfra(), ...infraOverrides };
    mongoUrl = shared.MONGO_URL;
    if (!infraOverrides?.NATS_URL && natsMode !== 'shared') nats = await startNatsServer();
    if (privateRedis) redis = await startRedisServer();
    const redisEnv: Record<string, string> = redis ? { REDIS_URL: redis.url } : {};
    const serviceEnv = { ...stackOptions.serviceEnv };
    if (privateRedis && privateRedis !== true)
      for (const s of privateRedis) serviceEnv[s] = { ...serviceEnv[s], ...redisEnv };
    stack = await startStack({
      ...stackOptions,
      infra: { ...shared, ...(nats ? { NATS_URL: nats.url } : {}), ...(privateRedis === true ? redisEnv : {}) },
      logDir,
      serviceEnv,
      env: {
        ...secrets,
        MONGO_DB_PREFIX: dbPrefix,
        LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
        // Kept data (the development stack) keeps the configured Redis prefix and delivery partition across starts.
        ...(keepDatabases ? {} : { REDIS_KEY_PREFIX: `${slug}:${runId}:`, WEBHOOK_PARTITION: `${slug}-${runId}` }),
        ...stackOptions.env,
      },
    });
  } catch (err) {
    await stop();
    throw err;
  }
  const s = stack;
  return {
    ...s,
    runId,
    dbPrefix,
    logDir,
    secrets,
    adminToken: secrets.ADMIN_TOKEN!,
    admin: client(s.gatewayUrl, secrets.ADMIN_TOKEN),
    analyticsUrl: `http://127.0.0.1:${s.env.ANALYTICS_PORT}`,
    natsUrl: s.env.NATS_URL!,
    nats,
    redis,
    process: (n) => {
      const found = s.processes.find((p) => p.name === n);
      if (!found) throw new Error(`no running ${n} process in the ${name} stack`);
      return found;
    },
    replicas: (n) => s.processes.filter((p) => p.name === n),
    onStop: (fn) => void cleanups.push(fn),
    stop,
  };
}
