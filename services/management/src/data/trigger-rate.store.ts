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

/** A Redis glob matching `text` literally. */
const globLiteral = (text: string) => text.replace(/[*?[\]\\]/g, '\\$&');

/**
 * Per-trigger webhook call counters in Redis (every management replica counts together), keyed by the trigger's
 * stored id `<tenant>:<project>:<agent>:<id>`, so a project's counters can be found and erased.
 */
export function triggerRateStore(redis: Redis) {
  if (!('triggerRateHit' in redis)) redis.defineCommand('triggerRateHit', { numberOfKeys: 1, lua: HIT });
  const client = redis as HitClient;
  return {
    /** Deletes the counters of every trigger of the project (SCAN: its pattern carries the key prefix, DEL adds it). */
    async eraseProject(scope: { tenantId: string; projectId: string }): Promise<number> {
      const keyPrefix = redis.options.keyPrefix ?? '';
      const match = `${globLiteral(keyPrefix)}trigger-rate:${globLiteral(`${scope.tenantId}:${scope.projectId}:`)}*`;
      let cursor = '0';
      let erased = 0;
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', match, 'COUNT', 1000);
        if (keys.length) erased += await redis.del(...keys.map((k) => k.slice(keyPrefix.length)));
        cursor = next;
      } while (cursor !== '0');
      return erased;
    },
    async hit(key: string, windowMs: number): Promise<{ count: number; msLeft: number }> {
      const [count, msLeft] = await client.triggerRateHit(`trigger-rate:${key}`, windowMs);
      return { count, msLeft };
    },
  };
}
