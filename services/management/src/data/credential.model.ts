import { scopedSchema, type Connection, type Model, type StoredDoc } from '@platform/mongo';

/**
 * `_id` is `<tenant>:<project>:<id>`. `retrievalParams` is kept as JSON text: it is free-form, and its keys
 * may start with `$` or contain `.`, which not every Mongo-wire server accepts as field names.
 */
const schema = scopedSchema(
  {
    name: { type: String, required: true },
    type: { type: String, required: true },
    credentialStoreId: { type: String, required: true },
    createdBy: { type: String, default: null },
    toolId: { type: String, default: null },
    userId: { type: String, default: null },
    retrievalParamsJson: { type: String, default: null },
    revision: { type: Number, required: true },
  },
  { collection: 'credentials', minimize: false },
);
schema.index({ tenantId: 1, projectId: 1, createdAt: -1, _id: 1 });

export type CredentialDoc = StoredDoc<typeof schema>;

export function credentialModel(db: Connection): Model<CredentialDoc> {
  return db.models.Credential ?? db.model<CredentialDoc>('Credential', schema);
}
