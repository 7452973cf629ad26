import {
  mongoose,
  scopedSchema,
  type Connection,
  type InferSchemaType,
  type Model,
  type StoredDoc,
} from '@platform/mongo';

const fileSchema = new mongoose.Schema(
  {
    id: { type: String, required: true },
    filePath: { type: String, required: true },
    content: { type: String, default: '' },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { _id: false },
);

/** One document per skill with its files inside (`_id` is `<tenant>:<project>:<id>`), so a skill changes atomically. */
const schema = scopedSchema(
  {
    name: { type: String, required: true },
    description: { type: String, required: true },
    content: { type: String, default: '' },
    /** The metadata map as JSON text (its keys may hold `.`). */
    metadata: { type: String, default: null },
    files: { type: [fileSchema], default: [] },
    revision: { type: Number, required: true },
  },
  { collection: 'skills', minimize: false },
);
schema.index({ tenantId: 1, projectId: 1, createdAt: -1, _id: 1 });

export type SkillFileDoc = InferSchemaType<typeof fileSchema>;
// files is a subdocument array, which InferSchemaType types as a DocumentArray; reads (lean) and writes use plain arrays.
export type SkillDoc = StoredDoc<typeof schema, string, { files: SkillFileDoc[] }>;

export function skillModel(db: Connection): Model<SkillDoc> {
  return db.models.Skill ?? db.model<SkillDoc>('Skill', schema);
}
