import type { Request } from 'express';
import type { Redis } from 'ioredis';
import { getLogger } from '@platform/logger';
import { bearerToken, cookieValue } from './authenticate';
import { authLockout, credentialHash, tooManyRequests } from './auth-lockout';

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
 * One round trip for every counter of a request: each key is counted up, gets the window as its lifetime when it has
 * none, and answers its count and the milliseconds it has left (fixed windows, as a key's first hit starts them).
 */
const HITS_SCRIPT = `
local out = {}
for i, key in ipairs(KEYS) do
  local n = redis.call('INCR', key)
  local left = redis.call('PTTL', key)
  if left < 0 then
    redis.call('PEXPIRE', key, ARGV[1])
    left = tonumber(ARGV[1])
  end
  out[2 * i - 1] = n
  out[2 * i] = left
end
return out`;

type HitsClient = Redis & { platformRateHits(numberOfKeys: number, ...args: Array<string | number>): Promise<number[]> };

/**
 * Gateway-wide limits kept in Redis (so every gateway replica counts together): one counter per client IP and one per
 * presented credential (a SHA-256 of the bearer token or session cookie, never the secret itself). Over a limit: 429
 * problem+json with Retry-After. When Redis cannot be reached the limits fail open (requests pass, a warning is logged
 * at most every 10 s): an outage of the counter store must not take the API down.
 */
export function rateLimiter(redis: Redis, opts: RateLimitOptions) {
  // Both counters of a request in one script call (one command for Redis to run, no per-counter objects here).
  if (!('platformRateHits' in redis)) redis.defineCommand('platformRateHits', { lua: HITS_SCRIPT });
  const counters = redis as HitsClient;
  const windowMs = opts.windowSeconds * 1000;
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

  const limited = (what: string, msLeft: number) => tooManyRequests(msLeft, (retryAfter) => `Rate limit exceeded for this ${what}; retry after ${retryAfter} s`);

  return {
    async check(req: Request): Promise<void> {
      if (!opts.enabled) return;
      const credential = bearerToken(req) ?? cookieValue(req, opts.cookieName);
      const keys = [`${opts.keyPrefix}:ip:${req.ip ?? 'unknown'}`];
      if (credential) keys.push(`${opts.keyPrefix}:cred:${credentialHash(credential)}`);
      let counts: number[];
      try {
        counts = await counters.platformRateHits(keys.length, ...keys, windowMs);
      } catch (err) {
        warnUnreachable(err);
        return;
      }
      // The address limit is reported first.
      if (counts[0]! > opts.perIp) throw limited('client address', counts[1]!);
      if (credential && counts[2]! > opts.perCredential) throw limited('credential', counts[3]!);
    },
    /** Failed-authentication lockout: `admit` before verifying, `failed` on a 401, `verified` on a fresh verification. */
    lockout,
  };
}
export type RateLimiter = ReturnType<typeof rateLimiter>;
