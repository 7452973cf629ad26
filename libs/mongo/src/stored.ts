import type { InferSchemaType } from 'mongoose';

/**
 * A stored document as its schema declares it (`InferSchemaType`), with two corrections InferSchemaType cannot make
 * itself: `_id` has the type the model stores (a declared `_id` path infers as optional), and the paths in `Narrow`
 * (Mixed paths, which it can only type as `any`) get the type the code writes there.
 */
export type StoredDoc<TSchema, Id = string, Narrow = unknown> = Omit<InferSchemaType<TSchema>, '_id' | keyof Narrow> & {
  _id: Id;
} & Narrow;
