import type { Redis } from 'ioredis';

/** Counts a hit of a fixed window and answers the count and the window's milliseconds left (the first hit starts it). */
const HIT = `
local n = redis.call('INCR', KEYS[1])
local left = redis.call('PTTL', KEYS[1])
if left < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  left = tonumber(ARGV[1])
end
return {n, left}`;

type HitClient = Redis & { triggerRateHit(key: string, windowMs: number): Promise<[number, number]> };

export type TriggerRateStore = ReturnType<typeof triggerRateStore>;

/** Per-trigger webhook call counters in Redis (every management replica counts together). */
export function triggerRateStore(redis: Redis) {
  if (!('triggerRateHit' in redis)) redis.defineCommand('triggerRateHit', { numberOfKeys: 1, lua: HIT });
  const client = redis as HitClient;
  return {
    async hit(key: string, windowMs: number): Promise<{ count: number; msLeft: number }> {
      const [count, msLeft] = await client.triggerRateHit(`trigger-rate:${key}`, windowMs);
      return { count, msLeft };
    },
  };
}
