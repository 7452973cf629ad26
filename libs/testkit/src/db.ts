import mongoose from 'mongoose';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './infra';
import { testStack } from './fixtures';

/**
 * Reads a service's own database directly, for tests that must prove what is (or is not) stored:
 * row counts after a crash, no plaintext secrets at rest. Never used to set up state.
 */
export async function withDatabase<T>(
  mongoUrl: string,
  service: string,
  fn: (db: mongoose.mongo.Db) => Promise<T>,
  prefix = testDbPrefix(),
  /** More connections, for a caller that runs many operations at once (the bench's driver-only ceilings). */
  maxPoolSize = 2,
): Promise<T> {
  const conn = mongoose.createConnection(mongoUrl, { dbName: serviceDbName(service, prefix), maxPoolSize });
  try {
    await conn.asPromise();
    return await fn(conn.db!);
  } finally {
    await conn.close();
  }
}

/** The database prefix of the shared test stack (each jest run has its own, dropped at the end of the run). */
export function testDbPrefix(): string {
  return existsSync(join(repoRoot, '.infra', 'test-stack.json')) ? (testStack().env.MONGO_DB_PREFIX ?? 'test') : 'test';
}

/** The database a service uses under a prefix (`<prefix>_<service>`). */
export function serviceDbName(service: string, prefix = testDbPrefix()): string {
  return `${prefix}_${service.replace(/-/g, '_')}`;
}

/** Drops every database of the given prefix (the end of a test run). */
export async function dropDatabases(mongoUrl: string, prefix: string): Promise<void> {
  const conn = mongoose.createConnection(mongoUrl, { maxPoolSize: 2 });
  try {
    await conn.asPromise();
    const { databases } = await conn.db!.admin().listDatabases({ nameOnly: true });
    for (const d of databases) if (d.name.startsWith(`${prefix}_`)) await conn.useDb(d.name).dropDatabase();
  } finally {
    await conn.close();
  }
}
