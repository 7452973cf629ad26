import { createHash } from 'node:crypto';
import type { Request } from 'express';
import type { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '@platform/problems';

export interface AuthLockoutOptions {
  enabled: boolean;
  keyPrefix: string;
  /** Failed authentications one client address may have per window before its unknown credentials are refused. */
  failuresPerIp: number;
  /** Failed authentications one presented credential may have per window (from anywhere) before it is refused. */
  failuresPerCredential: number;
  windowSeconds: number;
  /** How long a credential some gateway has verified counts as known (it is still verified; it is just let through). */
  knownSeconds: number;
  /** Called when Redis cannot be reached (the guard then lets the request through). */
  onUnreachable(err: unknown): void;
}

/** A presented credential, named by its SHA-256 (the secret itself never reaches Redis). */
export const credentialHash = (credential: string) => createHash('sha256').update(credential).digest('base64url');

const LOCAL_MARKS_MAX = 50_000;

/**
 * The failed-authentication lockout: slows down guessing, never a good client.
 *
 * - Every 401 counts against the client address and against the presented credential (both in Redis, so every
 *   gateway counts together).
 * - A client address over its limit is not refused: only the credentials it presents that no gateway has verified
 *   recently are refused (429 + Retry-After, without being checked). A credential a gateway has verified is marked
 *   known in Redis for `knownSeconds`, so the good clients behind a shared address (office NAT, CI provider, a
 *   cluster's egress) keep working while one misconfigured client there retries a stale key.
 * - A credential over its own limit is refused wherever it comes from (a revoked key hammering the API).
 * - A known credential that fails authentication (revoked since) stops being known.
 * - Without Redis everything passes (fails open, like the other limits).
 */
export function authLockout(redis: Redis, opts: AuthLockoutOptions) {
  const byAddress = new RateLimiterRedis({ storeClient: redis, keyPrefix: `${opts.keyPrefix}:authfail`, points: opts.failuresPerIp, duration: opts.windowSeconds });
  const byCredential = new RateLimiterRedis({ storeClient: redis, keyPrefix: `${opts.keyPrefix}:authfail-cred`, points: opts.failuresPerCredential, duration: opts.windowSeconds });
  const knownKey = (hash: string) => `${opts.keyPrefix}:known:${hash}`;
  // Credentials this gateway marked known lately: a busy credential is written to Redis about once per half lifetime.
  const marked = new Map<string, number>();

  const refused = (what: 'address' | 'credential', msBeforeNext: number) => {
    const retryAfter = Math.max(1, Math.ceil(msBeforeNext / 1000));
    const detail =
      what === 'address'
        ? `Too many failed authentications from this client address: credentials not recently verified are not checked; retry after ${retryAfter} s`
        : `Too many failed authentications with this credential; retry after ${retryAfter} s`;
    return new AppError('too_many_requests', detail, { headers: { 'retry-after': String(retryAfter) } });
  };
  const over = (res: RateLimiterRes | null, limit: number) => (res && res.consumedPoints > limit ? res : null);
  const address = (req: Request) => req.ip ?? 'unknown';

  return {
    /**
     * Throws 429 when the credential is over its own failure limit, or when the client address is over its limit and
     * the credential is not known (`knownHere`: this gateway's auth cache holds it; else Redis is asked).
     */
    async admit(req: Request, credential: string | undefined, knownHere: () => boolean): Promise<void> {
      if (!opts.enabled) return;
      const hash = credential ? credentialHash(credential) : undefined;
      try {
        const [ip, cred] = await Promise.all([byAddress.get(address(req)), hash ? byCredential.get(hash) : null]);
        const lockedCred = over(cred, opts.failuresPerCredential);
        if (lockedCred) throw refused('credential', lockedCred.msBeforeNext);
        const lockedIp = over(ip, opts.failuresPerIp);
        if (!lockedIp) return;
        if (hash && (knownHere() || (await redis.exists(knownKey(hash))) === 1)) return;
        throw refused('address', lockedIp.msBeforeNext);
      } catch (err) {
        if (err instanceof AppError) throw err;
        opts.onUnreachable(err);
      }
    },

    /** A 401: counts against the address and the credential; the failure that crosses a limit is answered 429. */
    async failed(req: Request, credential: string | undefined): Promise<void> {
      if (!opts.enabled) return;
      const hash = credential ? credentialHash(credential) : undefined;
      if (hash) marked.delete(hash);
      const results = await Promise.allSettled([
        byAddress.consume(address(req)),
        hash ? byCredential.consume(hash) : undefined,
        hash ? redis.del(knownKey(hash)) : undefined,
      ]);
      const [ip, cred] = results;
      for (const r of results) if (r.status === 'rejected' && !(r.reason instanceof RateLimiterRes)) opts.onUnreachable(r.reason);
      if (ip.status === 'rejected' && ip.reason instanceof RateLimiterRes) throw refused('address', ip.reason.msBeforeNext);
      if (cred.status === 'rejected' && cred.reason instanceof RateLimiterRes) throw refused('credential', cred.reason.msBeforeNext);
    },

    /** A gateway verified this credential (not from its cache): it is known to every gateway for `knownSeconds`. */
    verified(credential: string): void {
      if (!opts.enabled) return;
      const hash = credentialHash(credential);
      const now = Date.now();
      const last = marked.get(hash);
      if (last !== undefined && now - last < (opts.knownSeconds * 1000) / 2) return;
      marked.delete(hash);
      marked.set(hash, now);
      if (marked.size > LOCAL_MARKS_MAX) marked.delete(marked.keys().next().value!);
      redis.set(knownKey(hash), '1', 'EX', opts.knownSeconds).catch((err: unknown) => {
        marked.delete(hash);
        opts.onUnreachable(err);
      });
    },
  };
}
export type AuthLockout = ReturnType<typeof authLockout>;
