import { scopedSchema, type Connection, type Model, type StoredDoc } from '@platform/mongo';

/** `_id` is `<tenant>:<project>:<datasetId>:<id>`. `input`/`expectedOutput` are JSON text (free-form keys stay storable). */
const schema = scopedSchema(
  {
    datasetId: { type: String, required: true },
    input: { type: String, required: true },
    expectedOutput: { type: String, default: null },
  },
  { collection: 'datasetItems' },
);
schema.index({ tenantId: 1, projectId: 1, datasetId: 1, createdAt: 1 });

export type DatasetItemDoc = StoredDoc<typeof schema>;

export function datasetItemModel(db: Connection): Model<DatasetItemDoc> {
  return db.models.DatasetItem ?? db.model<DatasetItemDoc>('DatasetItem', schema);
}
