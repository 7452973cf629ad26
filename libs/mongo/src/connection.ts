import mongoose, { type Connection, type Model } from 'mongoose';
import { getLogger } from '@platform/logger';
import { counter } from '@platform/telemetry';
import { databaseLookup } from './lookup';

const log = getLogger('mongo');

export interface MongoOptions {
  url: string;
  dbPrefix: string;
  service: string;
  poolSize?: number;
}

// mongoose otherwise formats a stack trace for every query it runs (to report a query executed twice): 1.4 % of
// management's time listing API keys.
mongoose.set('skipOriginalStackTraces', true);

/** One connection per service, to its own database `<prefix>_<service>`. */
export async function connectMongo(opts: MongoOptions): Promise<Connection> {
  const dbName = `${opts.dbPrefix}_${opts.service.replace(/-/g, '_')}`;
  const conn = mongoose.createConnection(opts.url, {
    dbName,
    maxPoolSize: opts.poolSize ?? 20,
    serverSelectionTimeoutMS: 5_000,
    // No command waits forever on a connection that stopped answering (half-open after a network fault): the driver's
    // default is no limit. One minute is far above any read or write of the platform (callers give up after seconds).
    socketTimeoutMS: 60_000,
    // Indexes and collections are created by ensureIndexes() (only what is missing): on FerretDB a
    // createIndexes takes a global metadata lock, so restarts under load must not issue one needlessly.
    autoIndex: false,
    autoCreate: false,
    retryWrites: false,
    // Every command is reported to countWrites below: the bench reads database writes per delivered webhook from it.
    monitorCommands: true,
    // The database's name is resolved once per 30 s, not once per pooled connection (lookup.ts: a pending system
    // lookup keeps a process from exiting).
    lookup: databaseLookup,
  });
  countWrites(conn);
  await conn.asPromise();
  conn.on('disconnected', () => log.warn({ dbName }, 'database disconnected'));
  conn.on('reconnected', () => log.info({ dbName }, 'database reconnected'));
  return conn;
}

const WRITE_COMMANDS = new Set(['insert', 'update', 'delete', 'findAndModify']);

/**
 * `db_commands_total{command,collection}`: the write commands this process sent to the database (one `insertMany`
 * is one command, however many documents it carries). Exposed on /metrics, read by `pnpm bench` around a run.
 */
export function countWrites(conn: Connection): void {
  const total = counter('db_commands_total', 'Write commands sent to the database, by command and collection', [
    'command',
    'collection',
  ]);
  conn.getClient().on('commandStarted', (ev) => {
    if (!WRITE_COMMANDS.has(ev.commandName)) return;
    const collection = (ev.command as Record<string, unknown>)[ev.commandName];
    total.inc({ command: ev.commandName, collection: typeof collection === 'string' ? collection : '' });
  });
}

/** Indexes a schema no longer declares that an earlier release created: ensureIndexes drops them where present. */
const retired = new WeakMap<mongoose.Schema, Array<Record<string, 1 | -1>>>();

/**
 * Declares indexes that earlier releases created for this schema and that nothing reads through any more: every
 * index costs each insert its write, so a database created by an earlier release loses them at the next start.
 */
export function retireIndexes(schema: mongoose.Schema, keys: Array<Record<string, 1 | -1>>): void {
  retired.set(schema, [...(retired.get(schema) ?? []), ...keys]);
}

/**
 * Creates the indexes a model's schema declares that the collection does not have yet, and drops the ones it retired.
 * Called for every model at service start (see libs/runtime); a restart with everything in place issues no DDL at all.
 */
export async function ensureIndexes<T>(model: Model<T>): Promise<void> {
  let existing: Array<{ key: Record<string, unknown> }> = [];
  try {
    existing = (await model.collection.listIndexes().toArray()) as Array<{ key: Record<string, unknown> }>;
  } catch {
    // The collection does not exist yet: create it now, at start, rather than on a first write under load.
    await model.db.createCollection(model.collection.collectionName).catch(() => undefined);
  }
  const have = new Set(existing.map((i) => JSON.stringify(i.key)));
  for (const key of retired.get(model.schema) ?? []) {
    const found = (existing as Array<{ key: Record<string, unknown>; name: string }>).find(
      (i) => JSON.stringify(i.key) === JSON.stringify(key),
    );
    if (found) await model.collection.dropIndex(found.name);
  }
  for (const [fields, options] of model.schema.indexes()) {
    if (have.has(JSON.stringify(fields))) continue;
    await model.collection.createIndex(fields as Record<string, 1 | -1>, options as Record<string, unknown>);
  }
}

/** Is the database answering right now (for readiness). */
export async function mongoReady(conn: Connection): Promise<boolean> {
  try {
    if (conn.readyState !== 1 || !conn.db) return false;
    await conn.db.admin().ping();
    return true;
  } catch {
    return false;
  }
}
