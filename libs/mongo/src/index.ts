/**
 * The database library: one connection per service (connection.ts), tenant/project scoping and paging (scope.ts),
 * and database errors as problems (errors.ts). The transactional outbox lives in @platform/outbox.
 */
import mongoose from 'mongoose';

export { connectMongo, countWrites, ensureIndexes, mongoReady, retireIndexes, type MongoOptions } from './connection';
export { cachedLookup, databaseLookup, type CachedLookupOptions, type LookupFunction } from './lookup';
export { scoped, scopedId } from './scope';
export {
  insertUnlessTaken,
  listPage,
  projectRecords,
  updateAtRevision,
  type ListPageOptions,
  type PageQuery,
} from './records';
export { scopedSchema, type ScopedSchemaOptions } from './scoped-schema';
/** Repositories format stored times with the wire's helper. */
export { iso } from '@platform/contracts';
export { hasUnstorableKeys, loadedJson, storedJson } from './json-fields';
export { isDuplicateKey, isDatabaseUnavailable, unlessDuplicate, withDbErrors } from './errors';
export { mongoose };
export type { Connection, Model, InferSchemaType } from 'mongoose';
export type { StoredDoc } from './stored';
export { eraseProjectDocuments, keepThroughErasure, projectDocumentFilter } from './erasure';
export { reencryptCollection, type ReencryptReport, type SealedFields } from './sealed';
export { deleteTogether } from './delete-together';
