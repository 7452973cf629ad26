import http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { NatsConnection } from 'nats';
import { Redis } from 'ioredis';
import type { z } from 'zod';
import { baseConfig, loadConfig, mongoConfig, redisConfig } from '@platform/config';
import { ServiceBus, connectNats, ensureStream, platformEventsStream, publisher, type Publisher } from '@platform/bus';
import { healthSubject, type ServiceName } from '@platform/contracts';
import { connectMongo, ensureIndexes, mongoReady, type Connection } from '@platform/mongo';
import { getLogger, setLogLevel } from '@platform/logger';

export const instanceId = `${process.pid}-${randomUUID().slice(0, 8)}`;

export interface Deps<C> {
  config: C;
  nc: NatsConnection;
  bus: ServiceBus;
  pub: Publisher;
  db?: Connection;
  redis?: Redis;
}

export interface Running {
  /** Stop taking new work, finish what is in flight, release resources the service opened itself. */
  stop(): Promise<void>;
  /** Extra readiness checks of the service's own (beyond NATS, database and Redis). */
  ready?(): Promise<boolean>;
}

export interface ServiceDefinition<S extends z.ZodObject> {
  name: ServiceName;
  config: S;
  uses: { mongo?: boolean; redis?: boolean };
  start(deps: Deps<z.infer<S>>): Promise<Running>;
}

export function defineService<S extends z.ZodObject>(def: ServiceDefinition<S>): ServiceDefinition<S> {
  return def;
}

/** The config schema a service really parses: base + mongo/redis where used + its own. */
export function fullConfigSchema<S extends z.ZodObject>(def: ServiceDefinition<S>) {
  let schema: z.ZodObject = baseConfig.extend(def.config.shape);
  if (def.uses.mongo) schema = schema.extend(mongoConfig.shape);
  if (def.uses.redis) schema = schema.extend(redisConfig.shape);
  return schema as z.ZodObject;
}

export interface StartedService {
  name: string;
  healthPort?: number;
  stop(): Promise<void>;
  isReady(): Promise<boolean>;
  deps: Deps<any>;
}

/** Opens the service's connections, starts it and its health listener. Used by main.ts and by tests. */
export async function bootService<S extends z.ZodObject>(def: ServiceDefinition<S>, env: Record<string, string | undefined> = process.env): Promise<StartedService> {
  const config = loadConfig(fullConfigSchema(def), env) as z.infer<S> & z.infer<typeof baseConfig> & Partial<z.infer<typeof mongoConfig> & z.infer<typeof redisConfig>>;
  setLogLevel(config.LOG_LEVEL);
  const log = getLogger(`${def.name}.runtime`);
  const nc = await connectNats({ url: config.NATS_URL, name: `${def.name}:${instanceId}` });
  const jsm = await nc.jetstreamManager();
  await ensureStream(jsm, platformEventsStream, config.JS_REPLICAS);
  const bus = new ServiceBus(nc, def.name, config.NATS_REQUEST_TIMEOUT_MS);
  const pub = publisher(nc.jetstream());
  let db: Connection | undefined;
  let redis: Redis | undefined;
  if (def.uses.mongo) {
    db = await connectMongo({ url: config.MONGO_URL!, dbPrefix: config.MONGO_DB_PREFIX!, service: def.name, poolSize: config.MONGO_POOL_SIZE });
  }
  if (def.uses.redis) {
    redis = new Redis(config.REDIS_URL!, { keyPrefix: config.REDIS_KEY_PREFIX, maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true });
    redis.on('error', (err) => log.warn({ err: err.message }, 'redis error'));
    await redis.connect();
  }
  const deps: Deps<z.infer<S>> = { config, nc, bus, pub, db, redis };
  const running = await def.start(deps);
  if (db) for (const model of Object.values(db.models)) await ensureIndexes(model);

  const isReady = async () => {
    if (nc.isClosed() || nc.isDraining()) return false;
    if (db && !(await mongoReady(db))) return false;
    if (redis && redis.status !== 'ready') return false;
    if (running.ready && !(await running.ready())) return false;
    return true;
  };

  bus.serve(healthSubject(def.name), async () => ({ ok: true, status: 200, body: { service: def.name, instance: instanceId, ready: await isReady() } }));

  let server: http.Server | undefined;
  let healthPort: number | undefined;
  if (config.HEALTH_PORT !== undefined) {
    server = http.createServer(async (req, res) => {
      const url = req.url ?? '/';
      if (url.startsWith('/healthz') || url.startsWith('/livez')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'ok', service: def.name }));
      } else if (url.startsWith('/readyz')) {
        const ok = await isReady();
        res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ status: ok ? 'ready' : 'not ready', service: def.name }));
      } else {
        res.writeHead(404).end();
      }
    });
    await new Promise<void>((r) => server!.listen(config.HEALTH_PORT, '0.0.0.0', r));
    healthPort = (server.address() as AddressInfo).port;
  }
  log.info({ instance: instanceId, healthPort }, `${def.name} started`);

  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      log.info('stopping: draining requests and consumers');
      await bus.drain(config.SHUTDOWN_GRACE_MS);
      await running.stop();
      try {
        await nc.drain();
      } catch {
        /* closed already */
      }
      await db?.close().catch(() => undefined);
      redis?.disconnect();
      await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
      log.info('stopped');
    })());
  return { name: def.name, healthPort, stop, isReady, deps };
}

/** main.ts: boot, then stop on SIGTERM/SIGINT within the grace period. */
export function runMain<S extends z.ZodObject>(def: ServiceDefinition<S>): void {
  const log = getLogger(`${def.name}.main`);
  bootService(def)
    .then((svc) => {
      const onSignal = (signal: string) => {
        log.info({ signal }, 'signal received');
        const grace = Number(process.env.SHUTDOWN_GRACE_MS ?? 20000);
        setTimeout(() => {
          log.error('shutdown took longer than the grace period; exiting');
          process.exit(1);
        }, grace + 5000).unref();
        svc.stop().then(
          () => process.exit(0),
          (err) => {
            log.error({ err }, 'shutdown failed');
            process.exit(1);
          },
        );
      };
      process.once('SIGTERM', onSignal);
      process.once('SIGINT', onSignal);
    })
    .catch((err) => {
      // eslint-disable-next-line no-console
      console.error(`${def.name} failed to start:`, err instanceof Error ? err.message : err);
      process.exit(1);
    });
}

export { ServiceBus };
