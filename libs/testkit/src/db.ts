import mongoose from 'mongoose';

/**
 * Reads a service's own database directly, for tests that must prove what is (or is not) stored:
 * row counts after a crash, no plaintext secrets at rest. Never used to set up state.
 */
export async function withDatabase<T>(mongoUrl: string, service: string, fn: (db: mongoose.mongo.Db) => Promise<T>, prefix = 'test'): Promise<T> {
  const conn = mongoose.createConnection(mongoUrl, { dbName: `${prefix}_${service.replace(/-/g, '_')}`, maxPoolSize: 2 });
  try {
    await conn.asPromise();
    return await fn(conn.db!);
  } finally {
    await conn.close();
  }
}
