/**
 * The database library: one connection per service (connection.ts), tenant/project scoping and paging (scope.ts),
 * and database errors as problems (errors.ts). The transactional outbox lives in @platform/outbox.
 */
import mongoose, { type Connection, type Model } from 'mongoose';

export { connectMongo, ensureIndexes, mongoReady, type MongoOptions } from './connection';
export { scoped, scopedId, listPage, iso } from './scope';
export { isDuplicateKey, isDatabaseUnavailable, withDbErrors } from './errors';
export { mongoose };
export type { Connection, Model };
