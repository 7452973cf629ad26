import http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { NatsConnection } from 'nats';
import { Redis } from 'ioredis';
import type { z } from 'zod';
import {
  baseConfig,
  encryptionConfig,
  loadConfig,
  mongoConfig,
  redisConfig,
  sealingKeysOf,
  withSealingKeys,
  type EncryptionConfig,
} from '@platform/config';
import {
  BusKey,
  ServiceBus,
  busKeyFileOf,
  connectNats,
  ensureStream,
  platformEventsStream,
  publisher,
  readBusKeyFile,
  type Publisher,
} from '@platform/bus';
import { healthCallOf, serviceFacts, type BackendServiceName, type UsesOf } from '@platform/contracts';
import { connectMongo, ensureIndexes, mongoReady, type Connection } from '@platform/mongo';
import { Outbox } from '@platform/outbox';
import { getLogger, setLogLevel } from '@platform/logger';
import { SecretBox } from '@platform/secrets';
import {
  compactMemoryWhenIdle,
  initTracing,
  renderMetrics,
  shutdownTracing,
  startProcessMetrics,
} from '@platform/telemetry';

export const instanceId = `${process.pid}-${randomUUID().slice(0, 8)}`;

/** What a service uses besides NATS (`uses` in libs/contracts/src/services.ts); `start` gets them as required fields. */
export interface Uses {
  readonly mongo?: boolean;
  readonly redis?: boolean;
  /** Stores sealed secrets: reads ENCRYPTION_KEYS (or ENCRYPTION_KEY) and gets `box`, the SecretBox of those keys. */
  readonly sealing?: boolean;
}

export type Deps<C, U extends Uses = Uses> = {
  config: C;
  nc: NatsConnection;
  bus: ServiceBus;
  pub: Publisher;
} & (U extends { mongo: true } ? { db: Connection; outbox: Outbox } : { db?: Connection; outbox?: Outbox }) &
  (U extends { redis: true } ? { redis: Redis } : { redis?: Redis }) &
  (U extends { sealing: true } ? { box: SecretBox } : { box?: SecretBox });

export interface Running {
  /** Stop taking new work, finish what is in flight (within `graceMs`), release resources the service opened itself. */
  stop(graceMs?: number): Promise<void>;
  /** Extra readiness checks of the service's own (beyond NATS, database and Redis). */
  ready?(): Promise<boolean>;
}

export interface ServiceDefinition<S extends z.ZodObject, N extends BackendServiceName = BackendServiceName> {
  /** Its entry in libs/contracts/src/services.ts, which says which connections it gets. */
  name: N;
  config: S;
  start(deps: Deps<z.infer<S>, UsesOf<N>>): Promise<Running>;
}

export function defineService<S extends z.ZodObject, N extends BackendServiceName>(
  def: ServiceDefinition<S, N>,
): ServiceDefinition<S, N> {
  return def;
}

/** The config schema a service really parses: base + mongo/redis where used + its own. */
export function fullConfigSchema<S extends z.ZodObject, N extends BackendServiceName>(def: ServiceDefinition<S, N>) {
  const uses: Uses = serviceFacts(def.name).uses;
  let schema: z.ZodObject = baseConfig.extend(def.config.shape);
  if (uses.mongo) schema = schema.extend(mongoConfig.shape);
  if (uses.redis) schema = schema.extend(redisConfig.shape);
  if (uses.sealing) schema = withSealingKeys(schema.extend(encryptionConfig.shape));
  return schema as z.ZodObject;
}

export interface StartedService {
  name: string;
  healthPort?: number;
  /** SHUTDOWN_GRACE_MS: stop() finishes within it. */
  graceMs: number;
  stop(): Promise<void>;
  isReady(): Promise<boolean>;
  deps: Deps<any>;
}

/** Opens the service's connections, starts it and its health listener. Used by main.ts and by tests. */
export async function bootService<S extends z.ZodObject, N extends BackendServiceName>(
  def: ServiceDefinition<S, N>,
  env: Record<string, string | undefined> = process.env,
): Promise<StartedService> {
  const config = loadConfig(fullConfigSchema(def), env) as z.infer<S> &
    z.infer<typeof baseConfig> &
    Partial<z.infer<typeof mongoConfig> & z.infer<typeof redisConfig>>;
  setLogLevel(config.LOG_LEVEL);
  initTracing({
    service: def.name,
    otlpEndpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT,
    scheduleDelayMs: config.OTEL_BSP_SCHEDULE_DELAY,
  });
  startProcessMetrics();
  const log = getLogger(`${def.name}.runtime`);
  const nc = await connectNats({
    url: config.NATS_URL,
    name: `${def.name}:${instanceId}`,
    credsFile: config.NATS_CREDS,
    tlsCaFile: config.NATS_TLS_CA_FILE,
  });
  let db: Connection | undefined;
  let redis: Redis | undefined;
  let started: Running | undefined;
  /**
   * A boot that fails part-way closes what it opened, so nothing of it outlives it: a caller in the same process (a
   * test retrying a boot while Redis starts) would otherwise keep every attempt's NATS connection open.
   */
  const undone = async <T>(step: Promise<T>): Promise<T> => {
    try {
      return await step;
    } catch (err) {
      await started?.stop(0).catch(() => undefined);
      await nc.close().catch(() => undefined);
      await db?.close().catch(() => undefined);
      redis?.disconnect();
      throw err;
    }
  };
  const jsm = await undone(nc.jetstreamManager({ timeout: 15_000 }));
  await undone(ensureStream(jsm, platformEventsStream, config.JS_REPLICAS));
  // Its own bus key: it serves only the public operations the gateway signed (libs/bus/src/signature.ts).
  const bus = new ServiceBus(nc, def.name, config.NATS_REQUEST_TIMEOUT_MS, {
    key: BusKey.service(def.name, readBusKeyFile(busKeyFileOf(config.NATS_CREDS, config.BUS_KEY_FILE))),
    maxInFlight: config.BUS_MAX_IN_FLIGHT,
  });
  const pub = publisher(nc);
  const uses: Uses = serviceFacts(def.name).uses;
  if (uses.mongo) {
    db = await undone(
      connectMongo({
        url: config.MONGO_URL!,
        dbPrefix: config.MONGO_DB_PREFIX!,
        service: def.name,
        poolSize: config.MONGO_POOL_SIZE,
      }),
    );
  }
  if (uses.redis) {
    redis = new Redis(config.REDIS_URL!, {
      keyPrefix: config.REDIS_KEY_PREFIX,
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      lazyConnect: true,
      enableAutoPipelining: true,
    });
    redis.on('error', (err) => log.warn({ err: err.message }, 'redis error'));
    await undone(redis.connect());
  }
  const keys = uses.sealing ? sealingKeysOf(config as unknown as EncryptionConfig) : undefined;
  const acceptUnbound = (config as { ENCRYPTION_ACCEPT_UNBOUND?: string }).ENCRYPTION_ACCEPT_UNBOUND !== 'false';
  const box = keys && 'keys' in keys ? new SecretBox(keys.keys, { acceptUnbound }) : undefined;
  // The service's outbox: its repositories write through it; swept once the indexes are there, flushed at stop.
  const outbox = db ? new Outbox({ publisher: pub, instance: instanceId, sweepMs: config.OUTBOX_SWEEP_MS }) : undefined;
  const deps = { config, nc, bus, pub, db, outbox, redis, box } as Deps<z.infer<S>, UsesOf<N>>;
  const running = await undone(def.start(deps));
  started = running;
  if (db) for (const model of Object.values(db.models)) await undone(ensureIndexes(model));
  await undone(outbox?.start() ?? Promise.resolve());

  let stopping = false;
  /** Answers within `ms` or counts as false: a dependency that hangs is not ready. */
  const within = (check: Promise<boolean>, ms = 2000) =>
    Promise.race([check.catch(() => false), new Promise<boolean>((r) => setTimeout(() => r(false), ms).unref())]);
  /** Ready = not stopping, and every dependency of this service answers: NATS always, the database and Redis where used. */
  const isReady = async () => {
    if (stopping) return false;
    if (nc.isClosed() || nc.isDraining()) return false;
    if (db && !(await within(mongoReady(db)))) return false;
    if (redis && (redis.status !== 'ready' || !(await within(redis.ping().then((r) => r === 'PONG'))))) return false;
    if (running.ready && !(await within(running.ready()))) return false;
    return true;
  };

  bus.serveInternal(healthCallOf(def.name), async () => ({
    service: def.name,
    instance: instanceId,
    ready: await isReady(),
  }));

  let server: http.Server | undefined;
  let healthPort: number | undefined;
  if (config.HEALTH_PORT !== undefined) {
    server = http.createServer(async (req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      try {
        if (path === '/healthz' || path === '/livez') {
          // Liveness: the process answers. It never depends on NATS, the database or Redis (a restart would not help).
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ status: 'ok', service: def.name, instance: instanceId }));
        } else if (path === '/readyz') {
          const ok = await isReady();
          res
            .writeHead(ok ? 200 : 503, { 'content-type': 'application/json' })
            .end(JSON.stringify({ status: ok ? 'ready' : 'not ready', service: def.name, instance: instanceId }));
        } else if (path === '/metrics') {
          const m = await renderMetrics();
          res.writeHead(200, { 'content-type': m.contentType }).end(m.body);
        } else {
          res.writeHead(404).end();
        }
      } catch (err) {
        log.warn({ err }, 'health listener failed');
        if (!res.headersSent) res.writeHead(500).end();
      }
    });
    healthPort = await undone(listenOn(server, config.HEALTH_PORT, '0.0.0.0', 'HEALTH_PORT'));
  }
  log.info({ instance: instanceId, healthPort }, `${def.name} started`);

  let stopped: Promise<void> | undefined;
  const graceMs = config.SHUTDOWN_GRACE_MS;
  /**
   * Graceful stop, all within SHUTDOWN_GRACE_MS: readiness turns false; the NATS subscriptions drain (the queue group's
   * other replicas get new requests, the ones already received are answered); the service's own stop runs (durable
   * consumers stop pulling, finish or hand back what they hold, the service's outbox publishes what is pending); then the
   * connections close.
   */
  const stop = () =>
    (stopped ??= (async () => {
      stopping = true;
      const deadline = Date.now() + graceMs;
      const left = () => Math.max(0, deadline - Date.now() - 500);
      log.info({ graceMs }, 'stopping: draining requests and consumers');
      await bus.drain(left());
      // The service stops taking work first; what its outbox still holds is published after.
      const stopAll = running.stop(left()).finally(() => outbox?.stop());
      await Promise.race([stopAll, new Promise<void>((r) => setTimeout(r, left()).unref())]).catch((err) =>
        log.warn({ err }, 'service stop failed'),
      );
      try {
        await Promise.race([nc.drain(), new Promise<void>((r) => setTimeout(r, left()).unref())]);
      } catch {
        /* closed already */
      }
      await db?.close().catch(() => undefined);
      redis?.disconnect();
      await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
      server?.closeAllConnections();
      await shutdownTracing();
      log.info('stopped');
    })());
  return { name: def.name, healthPort, graceMs, stop, isReady, deps };
}

/** What `runProcess` boots: something that stops, within its grace period when it has one. */
export interface Stoppable {
  graceMs?: number;
  stop(): Promise<void>;
}

/** SHUTDOWN_GRACE_MS as the environment sets it, for a signal that comes before the configuration is loaded. */
function graceFromEnv(): number {
  const parsed = baseConfig.shape.SHUTDOWN_GRACE_MS.safeParse(process.env.SHUTDOWN_GRACE_MS);
  return parsed.success ? parsed.data : 20_000;
}

/**
 * A process's life (every main.ts): `boot` starts it, SIGTERM or SIGINT stops it within the grace period, and it exits
 * 0 once stopped (1 when stopping fails or outlasts the grace period; a second signal exits at once).
 *
 * The signal handlers are installed before boot. In a container the process is PID 1, and the kernel does not deliver
 * a signal to PID 1 that it has no handler for: a SIGTERM during start (a rolling deploy, a scale-down, a restart
 * right after a crash) was dropped and the process waited for the engine's SIGKILL 30 s later (found by the compose
 * smoke of `pnpm test:containers`). A signal during boot now stops the process as soon as boot ends.
 */
export function runProcess(name: string, boot: () => Promise<Stoppable>): void {
  const log = getLogger(`${name}.main`);
  let started: Stoppable | undefined;
  let signalled = false;
  const stop = (svc: Stoppable) =>
    svc.stop().then(
      () => process.exit(0),
      (err) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) {
      log.warn({ signal }, 'second signal; exiting now');
      process.exit(1);
    }
    signalled = true;
    log.info(
      { signal, starting: !started },
      started ? 'signal received; stopping' : 'signal received while starting; stopping once started',
    );
    setTimeout(() => {
      log.error('shutdown took longer than the grace period; exiting');
      process.exit(1);
    }, started?.graceMs ?? graceFromEnv()).unref();
    if (started) void stop(started);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  log.info('starting');
  // a boot that throws before its first await (a configuration error) ends the same way as one that rejects
  Promise.resolve()
    .then(boot)
    .then(
      (svc) => {
        started = svc;
        if (signalled) {
          void stop(svc);
          return;
        }
        // started: the garbage of start-up goes, and the young generation shrinks whenever the process is idle
        compactMemoryWhenIdle();
      },
      (err) => {
        // biome-ignore lint/suspicious/noConsole: the logger may not be set up when start fails; this one line goes to stderr
        console.error(`${name} failed to start:`, err instanceof Error ? err.message : err);
        process.exit(1);
      },
    );
}

/**
 * Starts `server` on `port` and answers the port it got. A port another process holds fails the start with a message
 * that names the setting (`HEALTH_PORT 8081 (0.0.0.0) is already in use by another process; set HEALTH_PORT to a free
 * port, or 0 for any`), instead of an unhandled 'error' event that ends the process with a stack and no word of ours.
 */
export function listenOn(server: http.Server, port: number, host: string, setting: string): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const failed = (err: NodeJS.ErrnoException) => {
      const why =
        err.code === 'EADDRINUSE'
          ? 'is already in use by another process'
          : err.code === 'EACCES'
            ? 'may not be opened by this user'
            : `cannot be opened (${err.message})`;
      reject(new Error(`${setting} ${port} (${host}) ${why}; set ${setting} to a free port, or 0 for any`));
    };
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** main.ts of a service: boot, then stop on SIGTERM/SIGINT within the grace period (`runProcess`). */
export function runMain<S extends z.ZodObject>(def: ServiceDefinition<S>): void {
  runProcess(def.name, () => bootService(def));
}

export { ServiceBus };
