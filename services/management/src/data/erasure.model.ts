import { keepThroughErasure, scopedSchema, type Connection, type Model, type StoredDoc } from '@platform/mongo';

const ERASURES_COLLECTION = 'erasures';

/**
 * An erasure job; `_id` is `<tenant>:<project>:<id>`. Kept after a project erasure as its record (what was erased,
 * when): it holds ids only. `services` lists the services that have a part; each part done is a document of its own
 * in `erasureParts` (parts are reported at the same moment, and a Mongo-wire server such as FerretDB may rewrite a whole
 * document per update: one document per part keeps concurrent reports from overwriting each other).
 */
const schema = scopedSchema(
  {
    kind: { type: String, required: true },
    conversationId: { type: String, default: null },
    status: { type: String, required: true },
    services: { type: [String], required: true },
    createdAt: { type: Date, required: true },
    completedAt: { type: Date, default: null },
  },
  { collection: ERASURES_COLLECTION, timestamps: false, minimize: false },
);
schema.index({ tenantId: 1, projectId: 1, kind: 1, conversationId: 1, status: 1 });
keepThroughErasure(schema);

export type ErasureDoc = StoredDoc<
  typeof schema,
  string,
  { kind: 'conversation' | 'project'; status: 'pending' | 'done'; services: string[] }
>;

const ERASURE_PARTS_COLLECTION = 'erasureParts';

/** A service's part of a job, done; `_id` is the job's `_id` and the service (`<tenant>:<project>:<id>:<service>`). */
const partSchema = scopedSchema(
  {
    erasureId: { type: String, required: true },
    service: { type: String, required: true },
    doneAt: { type: Date, required: true },
  },
  { collection: ERASURE_PARTS_COLLECTION, id: false, timestamps: false },
);
partSchema.index({ tenantId: 1, projectId: 1, erasureId: 1 });
keepThroughErasure(partSchema);

export type ErasurePartDoc = StoredDoc<typeof partSchema>;

export function erasurePartModel(db: Connection): Model<ErasurePartDoc> {
  return db.models.ErasurePart ?? db.model<ErasurePartDoc>('ErasurePart', partSchema);
}

export function erasureModel(db: Connection): Model<ErasureDoc> {
  return db.models.Erasure ?? db.model<ErasureDoc>('Erasure', schema);
}
