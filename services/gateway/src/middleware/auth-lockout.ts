import { hash } from 'node:crypto';
import type { Request } from 'express';
import type { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '@platform/problems';
import { clientAddressOf } from './client-address';

export interface AuthLockoutOptions {
  enabled: boolean;
  keyPrefix: string;
  /** Failed authentications one client address may have per window before its unknown credentials are refused. */
  failuresPerIp: number;
  /** IPv6 clients are counted by their network of this many bits (default 64). */
  ipv6PrefixLength?: number;
  /** Failed authentications one presented credential may have per window (from anywhere) before it is refused. */
  failuresPerCredential: number;
  windowSeconds: number;
  /** How long a credential some gateway has verified counts as known (it is still verified; it is just let through). */
  knownSeconds: number;
  /** Called when Redis cannot be reached (the guard then lets the request through). */
  onUnreachable(err: unknown): void;
}

/** 429 with `Retry-After` (whole seconds, at least 1) for a limit whose window ends in `msLeft`; `detail` gets the seconds. */
export function tooManyRequests(msLeft: number, detail: (retryAfter: number) => string): AppError {
  const retryAfter = Math.max(1, Math.ceil(msLeft / 1000));
  return new AppError('too_many_requests', detail(retryAfter), { headers: { 'retry-after': String(retryAfter) } });
}

const digests = new WeakMap<object, Map<string, string>>();

/**
 * A presented credential, named by its SHA-256 (the secret itself never reaches Redis or any cache). With `req`, the
 * digest is computed once per request however many checks ask for it (the rate limit, the lockout, the auth cache).
 */
export function credentialHash(credential: string, req?: object): string {
  if (!req) return hash('sha256', credential, 'base64url');
  let known = digests.get(req);
  if (!known) digests.set(req, (known = new Map()));
  let digest = known.get(credential);
  if (digest === undefined) known.set(credential, (digest = hash('sha256', credential, 'base64url')));
  return digest;
}

const LOCAL_MARKS_MAX = 50_000;

/** A presented credential as the lockout knows it: how it is verified (scheme) and its value. */
export interface PresentedCredential {
  kind: string;
  token: string;
}

/**
 * The failed-authentication lockout: slows down guessing, never a good client.
 *
 * - A 401 counts against the presented credential (any address), and against the client address the first time that
 *   credential fails from it in the window: guessing means many different credentials, while one client retrying one
 *   stale key, or a tool sending a good key to an operation of another scheme, is one. Both counters live in Redis, so
 *   every gateway counts together.
 * - A client address over its limit is not refused: only the credentials it presents that no gateway has verified
 *   recently are refused (429 + Retry-After, without being checked). A credential a gateway has verified is marked
 *   known in Redis for `knownSeconds`, so the good clients behind a shared address (office NAT, CI provider, a
 *   cluster's egress) keep working.
 * - A credential over its own limit is refused wherever it comes from (a revoked key hammering the API).
 * - A known credential is still verified on every use; when it fails (revoked since) it stops being known.
 * - Credentials are named by scheme and SHA-256 (the secret itself never reaches Redis).
 * - Without Redis everything passes (fails open, like the other limits).
 */
export function authLockout(redis: Redis, opts: AuthLockoutOptions) {
  const byAddress = new RateLimiterRedis({
    storeClient: redis,
    keyPrefix: `${opts.keyPrefix}:authfail`,
    points: opts.failuresPerIp,
    duration: opts.windowSeconds,
  });
  const byCredential = new RateLimiterRedis({
    storeClient: redis,
    keyPrefix: `${opts.keyPrefix}:authfail-cred`,
    points: opts.failuresPerCredential,
    duration: opts.windowSeconds,
  });
  const idOf = (c: PresentedCredential | undefined, req?: Request) =>
    c ? `${c.kind}:${credentialHash(c.token, req)}` : 'none';
  const knownKey = (id: string) => `${opts.keyPrefix}:known:${id}`;
  const seenKey = (ip: string, id: string) => `${opts.keyPrefix}:authfail-seen:${ip}:${id}`;
  // Credentials this gateway marked known lately: a busy credential is written to Redis about once per half lifetime.
  const marked = new Map<string, number>();

  const refused = (what: 'address' | 'credential', msBeforeNext: number) =>
    tooManyRequests(msBeforeNext, (retryAfter) =>
      what === 'address'
        ? `Too many failed authentications from this client address: credentials not verified recently are not checked; retry after ${retryAfter} s`
        : `Too many failed authentications with this credential; retry after ${retryAfter} s`,
    );
  const over = (res: RateLimiterRes | null, limit: number) => (res && res.consumedPoints > limit ? res : null);
  const address = (req: Request) => clientAddressOf(req, opts.ipv6PrefixLength ?? 64);

  return {
    /**
     * Throws 429 when the address or the credential is over its failure limit and the credential is not known
     * (`knownHere`: this gateway's auth cache holds it, and then nothing is read; else Redis is asked). Two counter
     * reads otherwise.
     */
    async admit(req: Request, credential: PresentedCredential | undefined, knownHere: () => boolean): Promise<void> {
      if (!opts.enabled) return;
      const id = credential ? idOf(credential, req) : undefined;
      // A credential this gateway verified lately passes whatever the counters say: no need to read them.
      if (id && knownHere()) return;
      try {
        const [ip, cred] = await Promise.all([byAddress.get(address(req)), id ? byCredential.get(id) : null]);
        const locked = over(cred, opts.failuresPerCredential)
          ? { what: 'credential' as const, res: cred! }
          : over(ip, opts.failuresPerIp)
            ? { what: 'address' as const, res: ip! }
            : null;
        if (!locked) return;
        if (id && (knownHere() || (await redis.exists(knownKey(id))) === 1)) return;
        throw refused(locked.what, locked.res.msBeforeNext);
      } catch (err) {
        if (err instanceof AppError) throw err;
        opts.onUnreachable(err);
      }
    },

    /** A 401: counts as described above; the failure that crosses a limit is answered 429. */
    async failed(req: Request, credential: PresentedCredential | undefined): Promise<void> {
      if (!opts.enabled) return;
      const id = idOf(credential, req);
      const ip = address(req);
      marked.delete(id);
      try {
        const [firstHere] = await Promise.all([
          redis.set(seenKey(ip, id), '1', 'EX', opts.windowSeconds, 'NX'),
          credential ? redis.del(knownKey(id)) : undefined,
        ]);
        const [byIp, byCred] = await Promise.allSettled([
          firstHere === 'OK' ? byAddress.consume(ip) : undefined,
          credential ? byCredential.consume(id) : undefined,
        ]);
        for (const r of [byIp, byCred])
          if (r.status === 'rejected' && !(r.reason instanceof RateLimiterRes)) opts.onUnreachable(r.reason);
        if (byCred.status === 'rejected' && byCred.reason instanceof RateLimiterRes)
          throw refused('credential', byCred.reason.msBeforeNext);
        if (byIp.status === 'rejected' && byIp.reason instanceof RateLimiterRes)
          throw refused('address', byIp.reason.msBeforeNext);
      } catch (err) {
        if (err instanceof AppError) throw err;
        opts.onUnreachable(err);
      }
    },

    /** A gateway verified this credential (not from its cache): it is known to every gateway for `knownSeconds`. */
    verified(credential: PresentedCredential): void {
      if (!opts.enabled) return;
      const id = idOf(credential);
      const now = Date.now();
      const last = marked.get(id);
      if (last !== undefined && now - last < (opts.knownSeconds * 1000) / 2) return;
      marked.delete(id);
      marked.set(id, now);
      if (marked.size > LOCAL_MARKS_MAX) marked.delete(marked.keys().next().value!);
      redis.set(knownKey(id), '1', 'EX', opts.knownSeconds).catch((err: unknown) => {
        marked.delete(id);
        opts.onUnreachable(err);
      });
    },
  };
}
export type AuthLockout = ReturnType<typeof authLockout>;
