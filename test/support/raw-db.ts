import mongoose from 'mongoose';

/**
 * Reads every database of a stack (names `<prefix>_<service>`) straight from the server, for tests that must
 * prove what is (or is not) stored. Yields each collection's documents that belong to `tenantId`.
 */
export async function rowsOfTenant(mongoUrl: string, prefix: string, tenantId: string): Promise<Record<string, unknown[]>> {
  const conn = mongoose.createConnection(mongoUrl, { maxPoolSize: 2 });
  try {
    await conn.asPromise();
    const { databases } = await conn.db!.admin().listDatabases();
    const out: Record<string, unknown[]> = {};
    for (const { name } of databases) {
      if (!name.startsWith(`${prefix}_`)) continue;
      const db = conn.useDb(name, { useCache: false }).db!;
      for (const c of await db.listCollections().toArray()) {
        const rows = await db.collection(c.name).find({ tenantId }).toArray();
        if (rows.length) out[`${name}.${c.name}`] = rows;
      }
    }
    return out;
  } finally {
    await conn.close();
  }
}

/** How many rows of `tenantId` each collection holds. */
export async function countsOfTenant(mongoUrl: string, prefix: string, tenantId: string): Promise<Record<string, number>> {
  const rows = await rowsOfTenant(mongoUrl, prefix, tenantId);
  return Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, v.length]));
}
