import type { Request } from 'express';
import type { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '@platform/problems';
import { getLogger } from '@platform/logger';
import { bearerToken, cookieValue } from './authenticate';
import { authLockout, credentialHash } from './auth-lockout';

const log = getLogger('gateway.rate-limit');

export interface RateLimitOptions {
  enabled: boolean;
  windowSeconds: number;
  perIp: number;
  perCredential: number;
  keyPrefix: string;
  cookieName: string;
  /** The failed-authentication lockout (see auth-lockout.ts). */
  authFailuresPerIp: number;
  authFailuresPerCredential: number;
  authFailureWindowSeconds: number;
  knownCredentialSeconds: number;
}

/**
 * Gateway-wide limits kept in Redis (so every gateway replica counts together): one counter per client IP and one per
 * presented credential (a SHA-256 of the bearer token or session cookie, never the secret itself). Over a limit: 429
 * problem+json with Retry-After. When Redis cannot be reached the limits fail open (requests pass, a warning is logged
 * at most every 10 s): an outage of the counter store must not take the API down.
 */
export function rateLimiter(redis: Redis, opts: RateLimitOptions) {
  const byIp = new RateLimiterRedis({ storeClient: redis, keyPrefix: `${opts.keyPrefix}:ip`, points: opts.perIp, duration: opts.windowSeconds });
  const byCredential = new RateLimiterRedis({ storeClient: redis, keyPrefix: `${opts.keyPrefix}:cred`, points: opts.perCredential, duration: opts.windowSeconds });
  let lastWarning = 0;
  const warnUnreachable = (err: unknown) => {
    if (Date.now() - lastWarning > 10_000) {
      lastWarning = Date.now();
      log.warn({ err: (err as Error)?.message }, 'rate-limit store unreachable; letting requests through');
    }
  };

  const lockout = authLockout(redis, {
    enabled: opts.enabled,
    keyPrefix: opts.keyPrefix,
    failuresPerIp: opts.authFailuresPerIp,
    failuresPerCredential: opts.authFailuresPerCredential,
    windowSeconds: opts.authFailureWindowSeconds,
    knownSeconds: opts.knownCredentialSeconds,
    onUnreachable: warnUnreachable,
  });

  const consume = async (limiter: RateLimiterRedis, key: string, what: string) => {
    try {
      await limiter.consume(key);
    } catch (res) {
      if (res instanceof RateLimiterRes) {
        const retryAfter = Math.max(1, Math.ceil(res.msBeforeNext / 1000));
        throw new AppError('too_many_requests', `Rate limit exceeded for this ${what}; retry after ${retryAfter} s`, { headers: { 'retry-after': String(retryAfter) } });
      }
      warnUnreachable(res);
    }
  };

  return {
    async check(req: Request): Promise<void> {
      if (!opts.enabled) return;
      const credential = bearerToken(req) ?? cookieValue(req, opts.cookieName);
      // Both counters in one round trip's time (they are independent keys); the address limit is reported first.
      const [ip, cred] = await Promise.allSettled([
        consume(byIp, req.ip ?? 'unknown', 'client address'),
        credential ? consume(byCredential, credentialHash(credential), 'credential') : undefined,
      ]);
      if (ip.status === 'rejected') throw ip.reason;
      if (cred.status === 'rejected') throw cred.reason;
    },
    /** Failed-authentication lockout: `admit` before verifying, `failed` on a 401, `verified` on a fresh verification. */
    lockout,
  };
}
export type RateLimiter = ReturnType<typeof rateLimiter>;
