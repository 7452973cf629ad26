import { AsyncLocalStorage } from 'node:async_hooks';
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

/** Paths pino redacts wherever they appear in a log object. */
export const redactPaths = [
  'key', 'apiKey', 'token', 'secret', 'password', 'value', 'authorization', 'cookie',
  '*.key', '*.apiKey', '*.token', '*.secret', '*.password', '*.value', '*.authorization', '*.cookie',
  'headers.authorization', 'headers.cookie', 'req.headers.authorization', 'req.headers.cookie',
  '*.headers.authorization', '*.headers.cookie', 'body', '*.body', 'access_token', 'subject_token', '*.subject_token',
];

let root: Logger | undefined;

function rootLogger(): Logger {
  if (!root) {
    root = pino({
      level: process.env.LOG_LEVEL ?? 'info',
      base: { service: process.env.SERVICE_NAME ?? 'platform' },
      redact: { paths: redactPaths, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      mixin() {
        const ctx = storage.getStore();
        return ctx ? { ...ctx } : {};
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
