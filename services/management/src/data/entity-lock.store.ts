import type { Redis } from 'ioredis';
import { Mutex, TimeoutError } from 'redis-semaphore';
import { tryAgainShortly } from '@platform/problems';
import { getLogger } from '@platform/logger';

const log = getLogger('management.entity-lock');

/** Runs `fn` while holding the lock of one entity. */
export type WithLock = <T>(key: string, fn: () => Promise<T>) => Promise<T>;

/**
 * A Redis mutex per entity (agent, skill) around read-modify-write. The Mongo-wire server we run on (FerretDB) does
 * not apply a conditional update (`{_id, revision}` filter) atomically: concurrent writers can all win. So writers
 * of one entity take turns here, and the revision guard stays as a second check. The lock is refreshed while held
 * and expires on its own if its holder dies.
 */
export function entityLock(redis: Redis): WithLock {
  return async (key, fn) => {
    const mutex = new Mutex(redis, `lock:${key}`, {
      lockTimeout: 10_000,
      refreshInterval: 3_000,
      acquireTimeout: 10_000,
      retryInterval: 5,
      onLockLost: (err) => log.warn({ err, key }, 'entity lock lost while held'),
    });
    try {
      await mutex.acquire();
    } catch (err) {
      if (err instanceof TimeoutError) throw tryAgainShortly('The resource is busy; try again shortly');
      throw tryAgainShortly('The lock store is not reachable; try again shortly', err);
    }
    try {
      return await fn();
    } finally {
      await mutex.release().catch((err: unknown) => log.warn({ err, key }, 'could not release entity lock'));
    }
  };
}
