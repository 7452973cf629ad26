import mongoose, { type SchemaDefinition } from 'mongoose';

export interface ScopedSchemaOptions {
  collection: string;
  /** Whether the record has an `id` of its own besides `_id` (default true); false where `_id` is the record's id. */
  id?: boolean;
  /**
   * false: no `createdAt` and `updatedAt` after the fields (a record that declares its times among its fields, where
   * they stand in its documents).
   */
  timestamps?: false;
  /** mongoose's `minimize` (drop empty objects when saving); mongoose's default (true) unless given. */
  minimize?: boolean;
}

// Fresh objects for every schema: mongoose keeps the options object of a path.
const text = () => ({ type: String, required: true }) as const;
const date = () => ({ type: Date, required: true }) as const;
type Text = ReturnType<typeof text>;
type Time = ReturnType<typeof date>;

type IdField<O> = O extends { id: false } ? Record<never, never> : { id: Text };
type TimeFields<O> = O extends { timestamps: false } ? Record<never, never> : { createdAt: Time; updatedAt: Time };
type ScopedDefinition<F, O> = { _id: { type: StringConstructor } } & IdField<O> & {
    tenantId: Text;
    projectId: Text;
  } & F &
  TimeFields<O>;

/**
 * The schema of a collection of a project's records, which every such collection starts the same way: `_id` (a string
 * the repository builds, such as `<tenant>:<project>:<id>`, or a public id), the record's own `id` (unless `id: false`),
 * `tenantId` and `projectId`; then `fields`; then `createdAt` and `updatedAt` (unless `timestamps: false`). `id`, the
 * scope and the times are required (strings and dates the repository sets). Stored without mongoose's version key.
 */
export function scopedSchema<const F extends SchemaDefinition, const O extends ScopedSchemaOptions>(
  fields: F,
  options: O,
) {
  const { collection, id = true, timestamps, minimize } = options;
  const definition = {
    _id: { type: String },
    ...(id ? { id: text() } : {}),
    tenantId: text(),
    projectId: text(),
    ...fields,
    ...(timestamps === false ? {} : { createdAt: date(), updatedAt: date() }),
  } as ScopedDefinition<F, O>;
  return new mongoose.Schema(definition, {
    collection,
    versionKey: false,
    ...(minimize === undefined ? {} : { minimize }),
  });
}
