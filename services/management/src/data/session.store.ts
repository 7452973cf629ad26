import type { Redis } from 'ioredis';
import { z } from 'zod';
import { Principal } from '@platform/contracts';
import { tryAgainShortly } from '@platform/problems';

/** What a session holds: who it acts as, the access token it was made from, and when and where it was opened. */
export const StoredSession = z.object({
  id: z.string(),
  principal: Principal,
  accessTokenId: z.string().nullable(),
  createdAt: z.string(),
  expiresAt: z.string(),
  ip: z.string().nullable(),
  userAgent: z.string().nullable(),
});
export type StoredSession = z.infer<typeof StoredSession>;

/** The index a session is listed in: its tenant's, or the platform admin's (`~` is outside the tenant id alphabet). */
export const ADMIN_SESSIONS = '~admin';
const ownerOf = (s: StoredSession) => (s.principal.kind === 'user' ? s.principal.tenantId : ADMIN_SESSIONS);

const sessionKey = (hash: string) => `session:${hash}`;
const indexKey = (owner: string) => `sessions:${owner}`;

/**
 * Browser sessions live in Redis under a keyed hash of the cookie value, with the session's TTL. Each tenant (and the
 * platform admin) has an index of its sessions (public id → keyed hash), so a revoked token, the user or the tenant's
 * owner can find and end them; entries whose session has expired are dropped when the index is read.
 */
export function sessionStore(redis: Redis, maxTtlSeconds: number) {
  async function removeAll(owner: string, found: { hash: string; session: StoredSession }[]) {
    if (found.length === 0) return;
    await redis
      .multi()
      .del(...found.map((f) => sessionKey(f.hash)))
      .hdel(indexKey(owner), ...found.map((f) => f.session.id))
      .exec();
  }
  return {
    async put(hash: string, session: StoredSession, ttlSeconds: number) {
      // The index lives as long as the longest session could: each new session renews it.
      await redis
        .multi()
        .set(sessionKey(hash), JSON.stringify(session), 'EX', ttlSeconds)
        .hset(indexKey(ownerOf(session)), session.id, hash)
        .expire(indexKey(ownerOf(session)), maxTtlSeconds)
        .exec();
    },
    /** The session, or null (unknown, expired, or written by a release that did not link sessions to their token). */
    async get(hash: string): Promise<StoredSession | null> {
      // Redis away: the session cannot be checked, so it is not accepted (503, fails closed; the caller retries).
      const raw = await redis.get(sessionKey(hash)).catch((err: unknown) => {
        throw tryAgainShortly('The session store is not reachable; try again shortly', err);
      });
      if (!raw) return null;
      const parsed = StoredSession.safeParse(JSON.parse(raw));
      return parsed.success ? parsed.data : null;
    },
    async remove(hash: string, session: StoredSession) {
      await removeAll(ownerOf(session), [{ hash, session }]);
    },
    /** Every live session of a tenant (or ADMIN_SESSIONS), newest first. */
    async listOf(owner: string): Promise<{ hash: string; session: StoredSession }[]> {
      const index = await redis.hgetall(indexKey(owner));
      const entries = Object.entries(index);
      if (entries.length === 0) return [];
      const raws = await redis.mget(...entries.map(([, hash]) => sessionKey(hash)));
      const live: { hash: string; session: StoredSession }[] = [];
      const gone: string[] = [];
      entries.forEach(([id, hash], i) => {
        const parsed = raws[i] ? StoredSession.safeParse(JSON.parse(raws[i]!)) : undefined;
        if (parsed?.success) live.push({ hash, session: parsed.data });
        else gone.push(id);
      });
      if (gone.length) await redis.hdel(indexKey(owner), ...gone);
      return live.sort(
        (a, b) => b.session.createdAt.localeCompare(a.session.createdAt) || a.session.id.localeCompare(b.session.id),
      );
    },
    removeAll,
  };
}
export type SessionStore = ReturnType<typeof sessionStore>;
