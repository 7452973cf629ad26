import type { Request } from 'express';
import type { Redis } from 'ioredis';
import { getLogger } from '@platform/logger';
import { bearerToken, cookieValue } from './authenticate';
import { authLockout, credentialHash, tooManyRequests } from './auth-lockout';
import { clientAddressOf } from './client-address';

const log = getLogger('gateway.rate-limit');

export interface RateLimitOptions {
  enabled: boolean;
  windowSeconds: number;
  perIp: number;
  /** IPv6 clients are counted by their network of this many bits (default 64). */
  ipv6PrefixLength?: number;
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
 * One round trip for the counters of many requests: each key is counted up by its number of hits (ARGV[i + 1]), gets
 * the window (ARGV[1]) as its lifetime when it has none, and answers its new count and the milliseconds it has left
 * (fixed windows, as a key's first hit starts them).
 */
const HITS_SCRIPT = `
local out = {}
for i, key in ipairs(KEYS) do
  local n = redis.call('INCRBY', key, ARGV[i + 1])
  local left = redis.call('PTTL', key)
  if left < 0 then
    redis.call('PEXPIRE', key, ARGV[1])
    left = tonumber(ARGV[1])
  end
  out[2 * i - 1] = n
  out[2 * i] = left
end
return out`;

type HitsClient = Redis & {
  platformRateTally(numberOfKeys: number, ...args: Array<string | number>): Promise<number[]>;
};

/** What one hit learned: whether it is within the limit, and the milliseconds its window has left. */
interface Hit {
  allowed: boolean;
  msLeft: number;
}

/** The hits of one key in one turn, and the hits it asks to count in advance (see `counterTally`). */
interface Tally {
  limit: number;
  hits: number;
  /** The hits of the turn waiting for their count (none when the key is in the turn only to top up its advance). */
  waiting: Array<{ resolve(hit: Hit): void; reject(err: unknown): void }>;
}

/** One key as this gateway knows it: hits counted in Redis ahead of use, and the key's recent rate. */
interface KeyState {
  /** Hits already counted in Redis for this gateway and not yet used. */
  credit: number;
  /** When the window those hits belong to ends (Date.now() clock). */
  until: number;
  /** The last advance granted (a top-up is asked for when half of it is used). */
  granted: number;
  /** An advance is on its way from Redis (no other is asked for meanwhile). */
  asking: boolean;
  /** The window ran out of hits: no advance is asked for before `until`. */
  spent: boolean;
  /** Hits since `since`, and the hits per millisecond measured before that. */
  seen: number;
  since: number;
  rate: number;
}

/** Keys per script call at most (a busy gateway with many client addresses sends several calls a turn). */
const KEYS_PER_CALL = 256;
/** At most this share of a limit is counted ahead by one gateway: a limit under 100 is never counted ahead. */
const ADVANCE_SHARE = 0.01;
/** An advance covers about this long at the key's recent rate (a key under 4 hits a second gets none). */
const ADVANCE_MS = 250;
/** A key's rate is measured over at least this long. */
const RATE_SAMPLE_MS = 50;
/** Keys remembered at most (the longest idle are dropped; their unused advance is then lost, never given twice). */
const KEYS_KEPT = 10_000;
/** A top-up whose window has more than this longer to run than the one known began a new window. */
const NEW_WINDOW_SLACK_MS = 1_000;

/**
 * Counts hits on Redis counters, shared by every gateway. Two ways, both exact for a single gateway:
 *
 * - **Counted in turn.** The hits of one turn of the event loop are counted up together, one script call for all their
 *   keys, and each hit learns the count it would have seen alone (the first of five hits on a key that stood at 10
 *   sees 11, the last 15). A request is refused exactly when it would have been with a command per request.
 * - **Counted in advance.** A busy key (over 4 hits a second here) also asks, in the same call, for the hits it will
 *   likely see in the next quarter second, at most 1 % of the limit. Redis counts them at once; the hits that follow
 *   are served from that advance without waiting for Redis, and a top-up is asked for in the background when half of
 *   it is used. Redis is then off the request path of a busy client: at 2,000 requests a second on one key, about
 *   eight script calls a second instead of one round trip per turn. A gateway never serves more hits than Redis
 *   granted it (the grant is cut to what is left of the limit), so the limit is never exceeded; another gateway can be
 *   refused early by at most the advances other gateways hold unused (1 % of the limit each), and an advance left
 *   unused when its window ends is not carried over.
 */
function counterTally(counters: HitsClient, windowMs: number) {
  let turn = new Map<string, Tally>();
  let scheduled = false;
  const keys = new Map<string, KeyState>();

  const stateOf = (key: string, now: number): KeyState => {
    let s = keys.get(key);
    if (!s) {
      s = { credit: 0, until: 0, granted: 0, asking: false, spent: false, seen: 0, since: now, rate: 0 };
      keys.set(key, s);
      if (keys.size > KEYS_KEPT) keys.delete(keys.keys().next().value!);
    }
    return s;
  };

  /** The hits to count ahead for a key now: a quarter second at its rate, within 1 % of the limit, none once spent. */
  const advanceFor = (s: KeyState, limit: number, now: number): number => {
    const elapsed = now - s.since;
    if (elapsed >= RATE_SAMPLE_MS) {
      s.rate = s.seen / elapsed;
      s.seen = 0;
      s.since = now;
    }
    if (s.spent && now < s.until) return 0;
    return Math.min(Math.floor(limit * ADVANCE_SHARE), Math.floor(s.rate * ADVANCE_MS));
  };

  const schedule = () => {
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
  const tallyOf = (key: string, limit: number) => {
    let t = turn.get(key);
    if (!t) turn.set(key, (t = { limit, hits: 0, waiting: [] }));
    return t;
  };

  const settle = (key: string, t: Tally, extra: number, total: number, msLeft: number, now: number) => {
    // Redis counted this turn's hits first, then the advance.
    const base = total - extra;
    t.waiting.forEach((w, j) => {
      w.resolve({ allowed: base - t.hits + j + 1 <= t.limit, msLeft });
    });
    const s = keys.get(key);
    if (!s) return;
    if (extra > 0) s.asking = false;
    const grant = Math.max(0, Math.min(extra, t.limit - base));
    const newWindow = now >= s.until || msLeft > s.until - now + NEW_WINDOW_SLACK_MS;
    if (newWindow) {
      s.credit = 0;
      s.spent = false;
    }
    s.until = now + msLeft;
    s.credit += grant;
    if (extra > 0) s.granted = grant;
    if (grant < extra || base > t.limit) s.spent = true;
  };

  const send = (part: Array<[string, Tally, number]>) => {
    const args = part.map(([, t, extra]) => t.hits + extra);
    counters.platformRateTally(part.length, ...part.map(([k]) => k), windowMs, ...args).then(
      (out) => {
        const now = Date.now();
        part.forEach(([key, t, extra], i) => {
          settle(key, t, extra, out[2 * i]!, out[2 * i + 1]!, now);
        });
      },
      (err: unknown) => {
        for (const [key, t, extra] of part) {
          const s = keys.get(key);
          if (s && extra > 0) s.asking = false;
          for (const w of t.waiting) w.reject(err);
        }
      },
    );
  };
  const flush = () => {
    scheduled = false;
    const batch = turn;
    turn = new Map();
    const now = Date.now();
    const calls: Array<[string, Tally, number]> = [];
    for (const [key, t] of batch) {
      const s = stateOf(key, now);
      // Kept in order of use, so the keys dropped first (over KEYS_KEPT) are the ones idle longest.
      keys.delete(key);
      keys.set(key, s);
      // A top-up, or hits that found no credit, ask for an advance unless one is already on its way.
      const extra = s.asking ? 0 : advanceFor(s, t.limit, now);
      if (extra > 0) s.asking = true;
      if (t.hits + extra > 0) calls.push([key, t, extra]);
    }
    for (let i = 0; i < calls.length; i += KEYS_PER_CALL) send(calls.slice(i, i + KEYS_PER_CALL));
  };

  return (key: string, limit: number): Promise<Hit> => {
    const now = Date.now();
    const s = stateOf(key, now);
    s.seen++;
    if (now >= s.until) s.credit = 0;
    if (s.credit > 0) {
      s.credit--;
      // Half of the advance used: the key goes into this turn's call, which asks for the next one.
      if (!s.asking && s.credit * 2 <= s.granted) {
        tallyOf(key, limit);
        schedule();
      }
      return Promise.resolve({ allowed: true, msLeft: s.until - now });
    }
    return new Promise<Hit>((resolve, reject) => {
      const t = tallyOf(key, limit);
      t.hits++;
      t.waiting.push({ resolve, reject });
      schedule();
    });
  };
}

/**
 * Gateway-wide limits kept in Redis (so every gateway replica counts together): one counter per client IP and one per
 * presented credential (a SHA-256 of the bearer token or session cookie, never the secret itself). Over a limit: 429
 * problem+json with Retry-After. When Redis cannot be reached the limits fail open (requests pass, a warning is logged
 * at most every 10 s): an outage of the counter store must not take the API down.
 */
export function rateLimiter(redis: Redis, opts: RateLimitOptions) {
  if (!('platformRateTally' in redis)) redis.defineCommand('platformRateTally', { lua: HITS_SCRIPT });
  const hit = counterTally(redis as HitsClient, opts.windowSeconds * 1000);
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
    ipv6PrefixLength: opts.ipv6PrefixLength,
    failuresPerCredential: opts.authFailuresPerCredential,
    windowSeconds: opts.authFailureWindowSeconds,
    knownSeconds: opts.knownCredentialSeconds,
    onUnreachable: warnUnreachable,
  });

  const limited = (what: string, msLeft: number) =>
    tooManyRequests(msLeft, (retryAfter) => `Rate limit exceeded for this ${what}; retry after ${retryAfter} s`);

  return {
    async check(req: Request): Promise<void> {
      if (!opts.enabled) return;
      const credential = bearerToken(req) ?? cookieValue(req, opts.cookieName);
      let ip: Hit;
      let cred: Hit | undefined;
      try {
        [ip, cred] = await Promise.all([
          hit(`${opts.keyPrefix}:ip:${clientAddressOf(req, opts.ipv6PrefixLength ?? 64)}`, opts.perIp),
          credential ? hit(`${opts.keyPrefix}:cred:${credentialHash(credential, req)}`, opts.perCredential) : undefined,
        ]);
      } catch (err) {
        warnUnreachable(err);
        return;
      }
      // The address limit is reported first.
      if (!ip.allowed) throw limited('client address', ip.msLeft);
      if (cred && !cred.allowed) throw limited('credential', cred.msLeft);
    },
    /** Failed-authentication lockout: `admit` before verifying, `failed` on a 401, `verified` on a fresh verification. */
    lockout,
  };
}
export type RateLimiter = ReturnType<typeof rateLimiter>;
