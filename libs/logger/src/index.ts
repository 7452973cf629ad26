import { AsyncLocalStorage } from 'node:async_hooks';
import { context, trace } from '@opentelemetry/api';
import pino, { type Logger } from 'pino';

/** What follows one request through the gateway, across NATS and into a service. */
export interface RequestContext {
  requestId: string;
  tenantId?: string;
  projectId?: string;
  traceId?: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

export function runWithContext<T>(ctx: RequestContext, fn: () => T): T {
  return storage.run(ctx, fn);
}

export function currentContext(): RequestContext | undefined {
  return storage.getStore();
}

/** Field names whose values are never logged, at the top level and one level down. */
const SECRET_FIELDS = [
  'key',
  'apiKey',
  'token',
  'accessToken',
  'access_token',
  'refresh_token',
  'id_token',
  'subject_token',
  'sessionToken',
  'session',
  'secret',
  'signingSecret',
  'previousSecret',
  'clientSecret',
  'client_secret',
  'password',
  'value',
  'values',
  'authorization',
  'cookie',
  'set-cookie',
  'body',
];

/** Paths pino redacts wherever they appear in a log object. */
export const redactPaths = [
  ...SECRET_FIELDS.map((f) => (/^[A-Za-z_$][\w$]*$/.test(f) ? f : `["${f}"]`)),
  ...SECRET_FIELDS.map((f) => (/^[A-Za-z_$][\w$]*$/.test(f) ? `*.${f}` : `*["${f}"]`)),
  'req.headers.authorization',
  'req.headers.cookie',
  '*.headers.authorization',
  '*.headers.cookie',
  '*.headers["x-api-key"]',
];

/**
 * Secret shapes removed from every line, wherever they appear (messages, error texts, unexpected fields): our API
 * keys, access tokens and analytics keys keep their public id (`sk_<id>.[redacted]`), webhook signing secrets, admin
 * tokens, bearer/basic credentials, JWTs and session cookies lose their value.
 */
const SECRET_PATTERNS: Array<[RegExp, string]> = [
  [/\b(sk|mt|ak)_([0-9A-Za-z]{12})\.[A-Za-z0-9_-]+/g, '$1_$2.[redacted]'],
  [/\bwhsec_[A-Za-z0-9+/=_-]+/g, 'whsec_[redacted]'],
  [/\badm_[A-Za-z0-9_-]+/g, 'adm_[redacted]'],
  [/\b(Bearer|Basic)\s+[^\s",;]+/gi, '$1 [redacted]'],
  [/\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g, '[redacted-jwt]'],
  [/(session_token=)[^;"\s]+/g, '$1[redacted]'],
];

export function redactSecrets(line: string): string {
  let out = line;
  for (const [re, to] of SECRET_PATTERNS) out = out.replace(re, to);
  return out;
}

/** The active trace id (OpenTelemetry), if a span is running. */
function activeTraceId(): string | undefined {
  const sc = trace.getSpan(context.active())?.spanContext();
  return sc && trace.isSpanContextValid(sc) ? sc.traceId : undefined;
}

let root: Logger | undefined;

function rootLogger(): Logger {
  if (!root) {
    root = pino({
      level: process.env.LOG_LEVEL ?? 'info',
      base: { service: process.env.SERVICE_NAME ?? 'platform' },
      redact: { paths: redactPaths, censor: '[redacted]' },
      hooks: { streamWrite: redactSecrets },
      timestamp: pino.stdTimeFunctions.isoTime,
      mixin() {
        const ctx = storage.getStore();
        const traceId = activeTraceId() ?? ctx?.traceId;
        return ctx ? { ...ctx, ...(traceId ? { traceId } : {}) } : traceId ? { traceId } : {};
      },
    });
  }
  return root;
}

export function setLogLevel(level: string): void {
  rootLogger().level = level;
}

/** A named child logger; request id, tenant and project are added from the request context. */
export function getLogger(name: string): Logger {
  return rootLogger().child({ name });
}

export type { Logger };
