import http from 'node:http';
import type { Duplex } from 'node:stream';
import express from 'express';
import cors from 'cors';
import { Redis } from 'ioredis';
import type { NatsConnection } from 'nats';
import { allOperations, type AnyOperation, buildAsyncApi, buildOpenApi } from '@platform/contracts';
import {
  BusKey,
  busKeyFileOf,
  connectNats,
  readBusKeyFile,
  ServiceBus,
  startErasureWorker,
  type RunningConsumer,
} from '@platform/bus';
import { idempotency } from './middleware/idempotency';
import { idempotencyClaims } from './middleware/idempotency-claims';
import { boundInFlight } from './middleware/in-flight';
import { erasingProjects, type ErasingProjects } from './middleware/erasing-projects';
import { AppError } from '@platform/problems';
import { getLogger, setLogLevel } from '@platform/logger';
import { initTracing, renderMetrics, shutdownTracing, startProcessMetrics } from '@platform/telemetry';
import { observe } from './middleware/observe';
import type { GatewayConfig } from './config';
import { requestId } from './middleware/request-id';
import { allowedHosts } from './middleware/allowed-hosts';
import { securityHeaders } from './middleware/security-headers';
import { errorMiddleware } from './middleware/errors';
import { authenticator, type Authenticator } from './middleware/authenticate';
import { mountOperations, type MountOptions } from './routes/mount-operations';
import { mountAnalyticsView } from './routes/analytics-view';
import { mountWebhooksView } from './routes/webhooks-view';
import { mountApiDocs } from './routes/api-docs';
import { rateLimiter } from './middleware/rate-limit';
import { listenOn } from '@platform/runtime';

const log = getLogger('gateway');

export interface RunningGateway {
  port: number;
  url: string;
  /** Base URL of the analytics listener ({analytics_url}). */
  analyticsUrl: string;
  /** Base URL of the health and metrics listener (HEALTH_PORT), if configured. */
  healthUrl?: string;
  /** SHUTDOWN_GRACE_MS: stop() finishes within it. */
  graceMs: number;
  stop(): Promise<void>;
}

/**
 * Requests node's HTTP parser refuses (bad header bytes such as CR/LF injection, oversized headers, header timeouts)
 * still get a problem+json answer, then the connection is closed.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, code, title, detail] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'request_header_fields_too_large', 'Request Header Fields Too Large', 'The request headers are too large']
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'request_timeout', 'Request Timeout', 'The request was not received in time']
        : [400, 'bad_request', 'Bad Request', 'The request could not be parsed as HTTP'];
  const body = JSON.stringify({ type: 'about:blank', title, status, detail, code, error: { code, message: detail } });
  socket.end(
    `HTTP/1.1 ${status} ${title}\r\ncontent-type: application/problem+json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

type Listener = { server: http.Server; port: number };

/** Whether the gateway is leaving (set by stop) and whether it can serve now. */
interface Lifecycle {
  draining: boolean;
  isReady(): boolean;
}

/** NATS and the bus the operations are sent on. */
async function openBus(config: GatewayConfig) {
  const nc = await connectNats({
    url: config.NATS_URL,
    name: 'gateway',
    credsFile: config.NATS_CREDS,
    tlsCaFile: config.NATS_TLS_CA_FILE,
  });
  // Requests no replica answered are sent again within NATS_REQUEST_TIMEOUT_MS (see libs/bus/src/retry.ts); after a
  // timeout only those that are safe to repeat (the operation's repeat policy, an internal call declared repeatable).
  const bus = new ServiceBus(nc, 'gateway', config.NATS_REQUEST_TIMEOUT_MS, {
    attemptTimeoutMs: config.RETRY_ATTEMPT_TIMEOUT_MS ?? Math.ceil(config.NATS_REQUEST_TIMEOUT_MS / 2),
    // Signs every public operation it sends, with the key of the service that owns it (libs/bus/src/signature.ts).
    key: BusKey.gateway(readBusKeyFile(busKeyFileOf(config.NATS_CREDS, config.BUS_KEY_FILE))),
  });
  return { nc, bus };
}

/** Redis for the rate limits and idempotency keys; a gateway starts (and its limits fail open) while it is away. */
async function openRedis(config: GatewayConfig): Promise<Redis> {
  // Offline queue off: while Redis is down a command fails at once and the limits fail open instead of stalling requests.
  // Auto-pipelining: the limit checks of concurrent requests leave in one socket write per event-loop tick (one write
  // per command showed as 8 % of the gateway's time under load).
  const redis = new Redis(config.REDIS_URL, {
    keyPrefix: config.REDIS_KEY_PREFIX,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    lazyConnect: true,
    enableAutoPipelining: true,
  });
  redis.on('error', (err) => log.warn({ err: err.message }, 'redis error'));
  await redis
    .connect()
    .catch((err) =>
      log.warn({ err: (err as Error).message }, 'redis not reachable at start; rate limits fail open until it is'),
    );
  return redis;
}

function rateLimits(redis: Redis, config: GatewayConfig, cookieName: string) {
  return rateLimiter(redis, {
    enabled: config.RATE_LIMIT_ENABLED,
    windowSeconds: config.RATE_LIMIT_WINDOW_SECONDS,
    perIp: config.RATE_LIMIT_PER_IP,
    ipv6PrefixLength: config.RATE_LIMIT_IPV6_PREFIX,
    perCredential: config.RATE_LIMIT_PER_CREDENTIAL,
    keyPrefix: config.RATE_LIMIT_KEY_PREFIX,
    cookieName,
    authFailuresPerIp: config.AUTH_FAILURE_LIMIT_PER_IP,
    authFailuresPerCredential: config.AUTH_FAILURE_LIMIT_PER_CREDENTIAL,
    authFailureWindowSeconds: config.AUTH_FAILURE_WINDOW_SECONDS,
    knownCredentialSeconds: config.AUTH_KNOWN_CREDENTIAL_SECONDS,
  });
}

/**
 * What a listener adds to the common app: middleware every request passes (`before` the operations), or pages and
 * documents served `after` them (express walks its layers in order: an API request need not pass every page's route).
 */
interface ListenerParts {
  before?: (app: express.Express) => void;
  after?: (app: express.Express) => void;
}

/** One express app per listener: the same request id, health, operation loop and error handling. */
function listenerApp(
  config: GatewayConfig,
  life: Lifecycle,
  mountOpts: MountOptions,
  name: string,
  ops: AnyOperation[],
  parts: ListenerParts,
) {
  const app = express();
  app.disable('x-powered-by');
  app.set(
    'trust proxy',
    config.TRUST_PROXY === 'true' ? true : config.TRUST_PROXY === 'false' ? false : config.TRUST_PROXY,
  );
  app.set('etag', false);
  // Security headers on every response (API answers are JSON; the analytics view sets its own stricter CSP).
  app.use(securityHeaders({ crossOriginResourcePolicy: { policy: 'cross-origin' } }));
  app.use((_req, res, next) => {
    if (life.draining) res.setHeader('connection', 'close');
    next();
  });
  // Probes before request ids, spans and request metrics: a load balancer's health checks every few seconds are not
  // API traffic (they would fill traces and `http_requests_total` with `unmatched`), and they stay cheap under load.
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', (_req, res) => {
    const ready = life.isReady();
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not ready' });
  });
  app.use(requestId);
  app.use(observe(name));
  app.use(boundInFlight(config.GATEWAY_MAX_IN_FLIGHT));
  if (config.ALLOWED_HOSTS) app.use(allowedHosts(config.ALLOWED_HOSTS));
  parts.before?.(app);
  // The operations' groups hang off the app itself: one router less to walk (and allocate for) on every request.
  mountOperations(app, ops, mountOpts);
  parts.after?.(app);
  app.use((req, _res, next) => next(new AppError('not_found', `No operation at ${req.method} ${req.path}`)));
  app.use(errorMiddleware);
  return app;
}

const isAnalytics = (op: AnyOperation) => op.listener === 'analytics';

/** The main API: every operation except those of the analytics base URL, the API documents and the views. */
function mainApp(config: GatewayConfig, life: Lifecycle, mountOpts: MountOptions) {
  // After the operations: no operation's path starts like a page's or a document's (/openapi.json, /docs, /…/view).
  const pages = (app: express.Express) => {
    // Both documents are built on first request (building them at start costs every gateway megabytes it keeps).
    let openapi: string | undefined;
    app.get('/openapi.json', (_req, res) => {
      openapi ??= JSON.stringify(
        buildOpenApi(allOperations, config.PUBLIC_BASE_URL ? [{ url: config.PUBLIC_BASE_URL }] : undefined),
      );
      res.type('application/json').send(openapi);
    });
    // The events internal consumers subscribe to on NATS (the same document as deploy/asyncapi.json).
    let asyncapi: string | undefined;
    app.get('/asyncapi.json', (_req, res) => {
      asyncapi ??= JSON.stringify(buildAsyncApi());
      res.type('application/json').send(asyncapi);
    });
    mountAnalyticsView(app);
    mountWebhooksView(app);
    mountApiDocs(app);
  };
  return listenerApp(
    config,
    life,
    mountOpts,
    'main',
    allOperations.filter((op) => !isAnalytics(op)),
    { after: pages },
  );
}

/**
 * The analytics base URL ({analytics_url}): its own port, so it can be scaled and rate-limited apart.
 * Web integrations call it from browsers with a bearer key (no cookies), so any origin may.
 */
function analyticsApp(config: GatewayConfig, life: Lifecycle, mountOpts: MountOptions, nc: NatsConnection) {
  const analyticsLimit = Math.max(...allOperations.filter(isAnalytics).map((op) => op.bodyLimit ?? 0));
  // The body travels in one NATS request (and the stored event in the reply): leave room for the envelope.
  if (nc.info && nc.info.max_payload < analyticsLimit + 64 * 1024) {
    log.warn(
      { maxPayload: nc.info.max_payload, analyticsLimit },
      'NATS max_payload is too small for the largest analytics bodies (set max_payload: 8MB on the server)',
    );
  }
  return listenerApp(config, life, mountOpts, 'analytics', allOperations.filter(isAnalytics), {
    before: (app) =>
      app.use(
        cors({
          origin: '*',
          methods: ['POST'],
          allowedHeaders: ['authorization', 'content-type', 'x-request-id'],
          exposedHeaders: ['x-request-id'],
          maxAge: 600,
        }),
      ),
  });
}

async function listen(config: GatewayConfig, app: express.Express, port: number, setting: string): Promise<Listener> {
  // Node checks these timeouts every connectionsCheckingInterval (30 s by default): check often enough that a slow
  // client is cut off close to its timeout, not up to 30 s later.
  const server = http.createServer(
    { connectionsCheckingInterval: Math.max(250, Math.min(5_000, Math.floor(config.HEADERS_TIMEOUT_MS / 4))) },
    app,
  );
  server.headersTimeout = config.HEADERS_TIMEOUT_MS;
  server.requestTimeout = config.REQUEST_TIMEOUT_MS;
  server.keepAliveTimeout = 5000;
  server.on('clientError', answerClientError);
  return { server, port: await listenOn(server, port, config.GATEWAY_HOST, setting) };
}

/** Health and metrics on their own port (HEALTH_PORT), like every service: /metrics is never on a public listener. */
async function listenHealth(port: number, life: Lifecycle): Promise<Listener> {
  const healthApp = express();
  healthApp.disable('x-powered-by');
  healthApp.get(['/healthz', '/livez'], (_req, res) => {
    res.json({ status: 'ok', service: 'gateway' });
  });
  healthApp.get('/readyz', (_req, res) => {
    const ready = life.isReady();
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not ready', service: 'gateway' });
  });
  healthApp.get('/metrics', async (_req, res) => {
    const m = await renderMetrics();
    res.type(m.contentType).send(m.body);
  });
  const server = http.createServer(healthApp);
  return { server, port: await listenOn(server, port, '0.0.0.0', 'HEALTH_PORT') };
}

/**
 * Graceful stop within SHUTDOWN_GRACE_MS: /readyz answers 503 at once; for SHUTDOWN_DELAY_MS the gateway keeps
 * serving (load balancers notice it is leaving); then the listeners stop accepting, requests in flight finish
 * (answered with `connection: close`), idle keep-alive connections close, and NATS drains.
 */
async function drainGateway(
  config: GatewayConfig,
  life: Lifecycle,
  parts: {
    listeners: Listener[];
    health: Listener | undefined;
    auth: Authenticator;
    erasing: ErasingProjects;
    erasure: RunningConsumer;
    redis: Redis;
    nc: NatsConnection;
  },
): Promise<void> {
  const graceMs = config.SHUTDOWN_GRACE_MS;
  life.draining = true;
  const deadline = Date.now() + graceMs;
  const delay = Math.min(config.SHUTDOWN_DELAY_MS, Math.max(0, graceMs - 2000));
  if (delay > 0) await new Promise((r) => setTimeout(r, delay));
  const close = (server: http.Server) =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
      setTimeout(() => server.closeAllConnections(), Math.max(0, deadline - Date.now() - 1000)).unref();
    });
  await Promise.all(parts.listeners.map((l) => close(l.server)));
  // An erasure job being worked is finished or goes back to its durable for another gateway.
  await parts.erasure.stop(Math.max(0, deadline - Date.now() - 1000)).catch(() => undefined);
  parts.auth.stop();
  parts.erasing.close();
  parts.redis.disconnect();
  await Promise.race([
    parts.nc.drain().catch(() => undefined),
    new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now() - 500)).unref()),
  ]);
  if (parts.health) {
    parts.health.server.close();
    parts.health.server.closeAllConnections();
  }
  await shutdownTracing();
}

export async function startGateway(config: GatewayConfig): Promise<RunningGateway> {
  setLogLevel(config.LOG_LEVEL);
  initTracing({
    service: 'gateway',
    otlpEndpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT,
    scheduleDelayMs: config.OTEL_BSP_SCHEDULE_DELAY,
  });
  startProcessMetrics();
  const { nc, bus } = await openBus(config);
  const cookieName = `${config.SESSION_COOKIE_PREFIX}.session_token`;
  const redis = await openRedis(config);
  const limits = rateLimits(redis, config, cookieName);
  // A credential verified here is known to every gateway: it passes the lockout of a noisy address (auth-lockout.ts).
  const auth = authenticator(bus, nc, {
    cookieName,
    ttlMs: config.AUTH_CACHE_TTL_MS,
    onVerified: (credential) => limits.lockout.verified(credential),
  });
  /**
   * Ready = not draining and NATS connected. Redis is deliberately not part of it: the rate limits fail open while
   * Redis is away, so every request can still be served; taking all gateways out of the load balancer over a
   * Redis outage would turn a degraded limit into a full outage.
   */
  const life: Lifecycle = {
    draining: false,
    isReady: () => !life.draining && !nc.isClosed() && !nc.isDraining() && nc.info !== undefined,
  };
  // When a project's erasure starts or ends, the verified credentials are forgotten: the erasure deletes the project's
  // API keys and analytics keys without revoking each, and none may keep working from a gateway's cache.
  const erasing = await erasingProjects(redis, nc, { onNotice: () => auth.forgetAll() });
  const keys = idempotency(redis, await idempotencyClaims(nc, config.JS_REPLICAS), {
    inFlightSeconds: Math.ceil(config.NATS_REQUEST_TIMEOUT_MS / 1000) + 10,
    isErasing: (scope) => erasing.has(scope),
  });
  // The gateway's part of erasure jobs: the stored answers of Idempotency-Key requests (docs/operating.md, "Erasure").
  const erasure = await startErasureWorker(nc, bus, 'gateway', {
    eraseProject: (scope) => keys.eraseProject(scope),
    eraseConversation: (scope, c) => keys.eraseConversation(scope, c),
  });
  const mountOpts = {
    bus,
    auth,
    limits,
    idempotency: keys,
    erasing,
    bodyLimit: config.BODY_LIMIT_BYTES,
    baseUrl: config.PUBLIC_BASE_URL,
    timeoutMs: config.NATS_REQUEST_TIMEOUT_MS,
  };
  const main = mainApp(config, life, mountOpts);
  const analytics = analyticsApp(config, life, mountOpts, nc);

  // The analytics listener opens first: once the main one answers /readyz, both are up.
  const analyticsListener = await listen(config, analytics, config.ANALYTICS_PORT, 'ANALYTICS_PORT');
  const mainListener = await listen(config, main, config.GATEWAY_PORT, 'GATEWAY_PORT');
  const health = config.HEALTH_PORT !== undefined ? await listenHealth(config.HEALTH_PORT, life) : undefined;
  const port = mainListener.port;
  log.info({ port, analyticsPort: analyticsListener.port, healthPort: health?.port }, 'gateway listening');

  let stopped: Promise<void> | undefined;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    analyticsUrl: `http://127.0.0.1:${analyticsListener.port}`,
    healthUrl: health ? `http://127.0.0.1:${health.port}` : undefined,
    graceMs: config.SHUTDOWN_GRACE_MS,
    stop() {
      return (stopped ??= drainGateway(config, life, {
        listeners: [mainListener, analyticsListener],
        health,
        auth,
        erasing,
        erasure,
        redis,
        nc,
      }));
    },
  };
}
