import type { Redis } from 'ioredis';

/** One-time use of signed tokens: a token's id is claimed once, and remembered until the token expires. */
export function nonceStore(redis: Redis) {
  return {
    /** True the first time an id is claimed, false on every replay. */
    async claim(kind: string, id: string, ttlSeconds: number): Promise<boolean> {
      const r = await redis.set(`chatapp:used:${kind}:${id}`, '1', 'EX', Math.max(1, Math.ceil(ttlSeconds)), 'NX');
      return r === 'OK';
    },
  };
}
export type NonceStore = ReturnType<typeof nonceStore>;
