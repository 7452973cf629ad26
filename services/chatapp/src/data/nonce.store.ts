import type { Redis } from 'ioredis';
import { tryAgainShortly } from '@platform/problems';

/** One-time use of signed tokens: a token's id is claimed once, and remembered until the token expires. */
export function nonceStore(redis: Redis) {
  return {
    /** True the first time an id is claimed, false on every replay. */
    async claim(kind: string, id: string, ttlSeconds: number): Promise<boolean> {
      // Redis away: one-time use cannot be checked, so the token is not accepted (503, fails closed).
      const r = await redis
        .set(`chatapp:used:${kind}:${id}`, '1', 'EX', Math.max(1, Math.ceil(ttlSeconds)), 'NX')
        .catch((err: unknown) => {
          throw tryAgainShortly('The one-time token store is not reachable; try again shortly', err);
        });
      return r === 'OK';
    },
  };
}
export type NonceStore = ReturnType<typeof nonceStore>;
