import { tryAgainShortly } from '@platform/problems';

export function isDuplicateKey(err: unknown): boolean {
  return (err as { code?: number })?.code === 11000;
}

/** Database errors surface as 503 problems (the request can be retried), never as a stack trace. */
export function isDatabaseUnavailable(err: unknown): boolean {
  const name = (err as Error)?.name ?? '';
  return /MongoNetwork|MongoServerSelection|MongoNotConnected|MongoPoolClosed|MongoTopologyClosed/.test(name);
}

export async function withDbErrors<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (isDatabaseUnavailable(err)) throw tryAgainShortly('The database is not reachable; try again shortly');
    throw err;
  }
}

/**
 * Runs an insert and answers null when a unique index already holds its key: repositories return "the record
 * exists" as a value, so the domain turns it into a conflict without knowing the database's error codes.
 */
export async function unlessDuplicate<T>(write: () => Promise<T>): Promise<T | null> {
  try {
    return await write();
  } catch (err) {
    if (isDuplicateKey(err)) return null;
    throw err;
  }
}
