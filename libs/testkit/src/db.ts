import mongoose from 'mongoose';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './infra';
import { testStack } from './fixtures';

/*
 * Direct reads of the services' databases, for tests that must prove what is (or is not) stored: row counts after a
 * crash, no plaintext secrets at rest, nothing stored after bad input; and, rarely, to write the state a killed process
 * leaves behind (never state the API can make).
 */

/** The database prefix of the shared test stack (each jest run has its own, dropped at the end of the run). */
export function testDbPrefix(): string {
  return existsSync(join(repoRoot, '.infra', 'test-stack.json')) ? (testStack().env.MONGO_DB_PREFIX ?? 'test') : 'test';
}

/** The database a service uses under a prefix (`<prefix>_<service>`). */
export function serviceDbName(service: string, prefix = testDbPrefix()): string {
  return `${prefix}_${service.replace(/-/g, '_')}`;
}

/** A short-lived connection to the server, closed whatever `fn` does. */
async function withServer<T>(
  mongoUrl: string,
  fn: (conn: mongoose.Connection) => Promise<T>,
  dbName?: string,
  maxPoolSize = 2,
): Promise<T> {
  const conn = mongoose.createConnection(mongoUrl, { maxPoolSize, ...(dbName ? { dbName } : {}) });
  try {
    await conn.asPromise();
    return await fn(conn);
  } finally {
    await conn.close();
  }
}

/** Every database of a prefix (`<prefix>_<service>`), as handles on one connection. */
async function databasesOf(
  conn: mongoose.Connection,
  prefix: string,
): Promise<Array<{ name: string; db: mongoose.mongo.Db }>> {
  const { databases } = await conn.db!.admin().listDatabases({ nameOnly: true });
  return databases
    .filter((d) => d.name.startsWith(`${prefix}_`))
    .map((d) => ({ name: d.name, db: conn.useDb(d.name, { useCache: false }).db! }));
}

/** Runs `fn` on one service's own database. */
export async function withDatabase<T>(
  mongoUrl: string,
  service: string,
  fn: (db: mongoose.mongo.Db) => Promise<T>,
  prefix = testDbPrefix(),
  /** More connections, for a caller that runs many operations at once (the bench's driver-only ceilings). */
  maxPoolSize = 2,
): Promise<T> {
  return withServer(mongoUrl, (conn) => fn(conn.db!), serviceDbName(service, prefix), maxPoolSize);
}

/** Drops every database of the given prefix (the end of a test run or of a private stack). */
export async function dropDatabases(mongoUrl: string, prefix: string): Promise<void> {
  await withServer(mongoUrl, async (conn) => {
    for (const { db } of await databasesOf(conn, prefix)) await db.dropDatabase();
  });
}

/** Every collection's documents that match `filter`, in every database of a prefix (`<db>.<collection>` keys). */
async function rowsMatching(
  mongoUrl: string,
  prefix: string,
  filter: Record<string, unknown>,
): Promise<Record<string, unknown[]>> {
  return withServer(mongoUrl, async (conn) => {
    const out: Record<string, unknown[]> = {};
    for (const { name, db } of await databasesOf(conn, prefix)) {
      for (const c of await db.listCollections().toArray()) {
        const rows = await db.collection(c.name).find(filter).toArray();
        if (rows.length) out[`${name}.${c.name}`] = rows;
      }
    }
    return out;
  });
}

/** Every collection's documents that belong to `tenantId`, in every database of a prefix (`<db>.<collection>` keys). */
export async function rowsOfTenant(
  mongoUrl: string,
  prefix: string,
  tenantId: string,
): Promise<Record<string, unknown[]>> {
  return rowsMatching(mongoUrl, prefix, { tenantId });
}

/**
 * Every document of a project in every database of a prefix (`<db>.<collection>` keys): those with its `tenantId` and
 * `projectId`, those whose `_id` holds `<tenant>:<project>` as whole `:`-separated parts (stores keyed by id, at the
 * start or after a kind such as `stamp:`), and those naming it as their `defaultProjectId` or in a `projectId` alone
 * (records of another tenant cannot: project ids are unique in a test).
 */
export async function rowsOfProject(
  mongoUrl: string,
  prefix: string,
  scope: { tenantId: string; projectId: string },
): Promise<Record<string, unknown[]>> {
  const idPart = `${scope.tenantId}:${scope.projectId}`.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const filter = {
    $or: [
      { projectId: scope.projectId },
      { defaultProjectId: scope.projectId },
      { _id: { $regex: `(^|:)${idPart}(:|$)` } },
    ],
  } as Record<string, unknown>;
  return rowsMatching(mongoUrl, prefix, filter);
}

/** How many rows of `tenantId` each collection holds. */
export async function countsOfTenant(
  mongoUrl: string,
  prefix: string,
  tenantId: string,
): Promise<Record<string, number>> {
  const rows = await rowsOfTenant(mongoUrl, prefix, tenantId);
  return Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, v.length]));
}
