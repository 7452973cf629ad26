import type { Redis } from 'ioredis';
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';

/**
 * Issued challenges live in Redis until they expire; verifying a solution deletes its challenge,
 * so each solution verifies once (the DEL that returns 1 wins, on every replica).
 */
export function challengeStore(redis: Redis, limit: { points: number; windowSeconds: number }) {
  const limiter = new RateLimiterRedis({
    storeClient: redis,
    keyPrefix: 'rl-challenge',
    points: limit.points,
    duration: limit.windowSeconds,
  });
  return {
    async remember(challenge: string, ttlSeconds: number): Promise<void> {
      await redis.set(`challenge:${challenge}`, '1', 'EX', ttlSeconds);
    },
    /** True the first time only; false when already used, never issued or expired. */
    async consume(challenge: string): Promise<boolean> {
      return (await redis.del(`challenge:${challenge}`)) === 1;
    },
    /** Counts one request for `key`; resolves with the seconds to wait when the limit is exceeded, else null. Throws when Redis is unreachable. */
    async hit(key: string): Promise<number | null> {
      try {
        await limiter.consume(key);
        return null;
      } catch (res) {
        if (res instanceof RateLimiterRes) return Math.max(1, Math.ceil(res.msBeforeNext / 1000));
        throw res;
      }
    },
  };
}
export type ChallengeStore = ReturnType<typeof challengeStore>;
