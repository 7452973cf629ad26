import { mongoose, type Connection, type Model, type StoredDoc } from '@platform/mongo';

/**
 * An erasure job; `_id` is `<tenant>:<project>:<id>`. Kept after a project erasure as its record (what was erased,
 * when, by whom): it holds ids only. `services` maps each service to `{state, doneAt}`.
 */
const schema = new mongoose.Schema(
  {
    _id: { type: String },
    id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    kind: { type: String, required: true },
    conversationId: { type: String, default: null },
    status: { type: String, required: true },
    services: { type: mongoose.Schema.Types.Mixed, required: true },
    createdAt: { type: Date, required: true },
    completedAt: { type: Date, default: null },
  },
  { collection: 'erasures', versionKey: false, minimize: false },
);
schema.index({ tenantId: 1, projectId: 1, kind: 1, conversationId: 1, status: 1 });

export type ErasureDoc = StoredDoc<
  typeof schema,
  string,
  { kind: 'conversation' | 'project'; status: 'pending' | 'done'; services: Record<string, { state: 'pending' | 'done'; doneAt: Date | null }> }
>;

export const ERASURES_COLLECTION = 'erasures';

export function erasureModel(db: Connection): Model<ErasureDoc> {
  return db.models.Erasure ?? db.model<ErasureDoc>('Erasure', schema);
}
