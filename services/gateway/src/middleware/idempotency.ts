import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import type { Request } from 'express';
import type { Redis } from 'ioredis';
import {
  acceptsIdempotencyKey,
  type AnyOperation,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_PATTERN,
  IDEMPOTENCY_KEY_TTL_SECONDS,
  type Principal,
} from '@platform/contracts';
import type { WireReply } from '@platform/bus';
import { AppError } from '@platform/problems';
import { getLogger } from '@platform/logger';

const log = getLogger('gateway.idempotency');

/**
 * `Idempotency-Key` on creates (IETF httpapi draft): the first answer to a key is kept for 24 hours per tenant; the
 * same key with the same request answers it again (with `Idempotent-Replayed: true`) without calling the service,
 * with another request 422, and while the first is still being served 409.
 *
 * Stored in Redis, which every gateway replica already shares for the rate limits: one `SET NX` with an expiry is the
 * in-flight marker all replicas agree on, and the 24 h expiry of the stored answer is Redis's own (no clean-up job).
 * The gateway owns no database, and the services' collections know nothing of HTTP answers. Nothing readable is
 * stored: the Redis key is a SHA-256 of tenant and key, and the answer (which can hold a secret shown once, such as a
 * new API key) is encrypted with AES-256-GCM under a key derived from the Idempotency-Key, which only the caller
 * knows. When Redis cannot be reached a request with a key gets 503 (the promise of one execution cannot be kept);
 * requests without a key never touch Redis.
 */
export interface Idempotency {
  /** The request's key, when the operation takes one and the header is there (400 for a malformed key). */
  keyOf(op: AnyOperation, req: Request): string | undefined;
  /** Calls `send` at most once per key (see above); without a key just calls it. */
  run(op: AnyOperation, req: Request, principal: Principal, key: string | undefined, send: () => Promise<WireReply>): Promise<WireReply>;
}

export interface IdempotencyOptions {
  /** How long a key stays "in flight" if its gateway dies before the answer (the request deadline plus a margin). */
  inFlightSeconds: number;
  keyPrefix?: string;
}

type Entry = { state: 'in-flight'; fingerprint: string } | { state: 'done'; fingerprint: string; reply: string };

const sha256 = (...parts: string[]) => createHash('sha256').update(parts.join('\u0000')).digest();

/** JSON with object keys sorted, so the same body in another key order is the same request. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function tenantOf(principal: Principal, req: Request): string {
  if ('tenantId' in principal) return principal.tenantId;
  return typeof req.params.tenantId === 'string' ? req.params.tenantId : '-';
}

/** Who sent it: a key replays only to the caller that used it first (another caller with the key gets 422). */
function callerOf(principal: Principal): string {
  switch (principal.kind) {
    case 'user':
      return `user:${principal.userId}`;
    case 'run':
      return `run:${principal.apiKeyId ?? principal.appId ?? ''}:${principal.subject ?? ''}`;
    case 'analytics':
      return `analytics:${principal.keyId}`;
    default:
      return principal.kind;
  }
}

function seal(secret: Buffer, reply: WireReply): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', secret, iv);
  const data = Buffer.concat([cipher.update(JSON.stringify(reply), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), data]).toString('base64');
}

function open(secret: Buffer, sealed: string): WireReply {
  const raw = Buffer.from(sealed, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', secret, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')) as WireReply;
}

const unavailable = () =>
  new AppError('service_unavailable', 'Requests with an Idempotency-Key cannot be served right now; try again shortly', { headers: { 'retry-after': '1' } });

export function idempotency(redis: Redis, opts: IdempotencyOptions): Idempotency {
  const prefix = opts.keyPrefix ?? 'idem:';
  const inFlightMs = opts.inFlightSeconds * 1000;
  const ttlMs = IDEMPOTENCY_KEY_TTL_SECONDS * 1000;

  const read = async (redisKey: string): Promise<Entry | null> => {
    const raw = await redis.get(redisKey);
    return raw ? (JSON.parse(raw) as Entry) : null;
  };

  return {
    keyOf(op, req) {
      const value = req.headers[IDEMPOTENCY_KEY_HEADER];
      if (value === undefined || !acceptsIdempotencyKey(op)) return undefined;
      if (typeof value !== 'string' || !IDEMPOTENCY_KEY_PATTERN.test(value)) {
        const detail = 'must be 1 to 255 visible ASCII characters (a UUID, for example)';
        throw new AppError('bad_request', `The Idempotency-Key header ${detail}`, { errors: [{ pointer: '/headers/idempotency-key', detail }] });
      }
      return value;
    },

    async run(op, req, principal, key, send) {
      if (key === undefined) return send();
      const tenant = tenantOf(principal, req);
      const redisKey = prefix + sha256('key', tenant, key).toString('hex');
      const secret = sha256('seal', tenant, key);
      const fingerprint = sha256(callerOf(principal), op.operationId, canonical(req.params), canonical(req.query), canonical(req.body)).toString('base64');

      let entry: Entry | null;
      try {
        const claimed = await redis.set(redisKey, JSON.stringify({ state: 'in-flight', fingerprint } satisfies Entry), 'PX', inFlightMs, 'NX');
        entry = claimed === 'OK' ? null : await read(redisKey);
        // Expired between the two commands: claim again (a second miss is answered as in flight).
        if (claimed !== 'OK' && entry === null) {
          const again = await redis.set(redisKey, JSON.stringify({ state: 'in-flight', fingerprint } satisfies Entry), 'PX', inFlightMs, 'NX');
          if (again !== 'OK') entry = { state: 'in-flight', fingerprint };
        }
      } catch (err) {
        log.warn({ err: (err as Error).message }, 'idempotency store unreachable');
        throw unavailable();
      }

      if (entry) {
        if (entry.fingerprint !== fingerprint) {
          throw new AppError('unprocessable_entity', 'This Idempotency-Key was already used for a different request; use a new key for a new request');
        }
        if (entry.state === 'in-flight') {
          throw new AppError('conflict', 'A request with this Idempotency-Key is still being processed; retry after it has been answered', { headers: { 'retry-after': '1' } });
        }
        const stored = open(secret, entry.reply);
        return { ...stored, headers: { ...stored.headers, 'idempotent-replayed': 'true' } };
      }

      let reply: WireReply;
      try {
        reply = await send();
      } catch (err) {
        // No answer from the service (503/504): the key is free again, so the client can retry with it.
        await redis.del(redisKey).catch(() => undefined);
        throw err;
      }
      try {
        if (!reply.ok && reply.problem.status >= 500) await redis.del(redisKey);
        else await redis.set(redisKey, JSON.stringify({ state: 'done', fingerprint, reply: seal(secret, reply) } satisfies Entry), 'PX', ttlMs);
      } catch (err) {
        // The answer still goes out; the in-flight marker runs out after inFlightSeconds.
        log.warn({ err: (err as Error).message }, 'could not store the answer of an idempotent request');
      }
      return reply;
    },
  };
}
