import type { Redis } from 'ioredis';
import type { Principal } from '@platform/contracts';

/** Browser sessions live in Redis under a keyed hash of the cookie value, with the session's TTL. */
export function sessionStore(redis: Redis) {
  return {
    async put(hash: string, principal: Principal, ttlSeconds: number) {
      await redis.set(`session:${hash}`, JSON.stringify(principal), 'EX', ttlSeconds);
    },
    async get(hash: string): Promise<Principal | null> {
      const raw = await redis.get(`session:${hash}`);
      return raw ? (JSON.parse(raw) as Principal) : null;
    },
    async remove(hash: string) {
      await redis.del(`session:${hash}`);
    },
  };
}
export type SessionStore = ReturnType<typeof sessionStore>;
