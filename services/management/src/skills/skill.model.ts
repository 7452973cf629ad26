import { mongoose, type Connection, type Model } from '@platform/mongo';

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
const schema = new mongoose.Schema(
  {
    _id: { type: String },
    id: { type: String, required: true },
    tenantId: { type: String, required: true },
    projectId: { type: String, required: true },
    name: { type: String, required: true },
    description: { type: String, required: true },
    content: { type: String, default: '' },
    /** The metadata map as JSON text (its keys may hold `.`). */
    metadata: { type: String, default: null },
    files: { type: [fileSchema], default: [] },
    revision: { type: Number, required: true },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'skills', versionKey: false, minimize: false },
);
schema.index({ tenantId: 1, projectId: 1, createdAt: -1, _id: 1 });

export function skillModel(db: Connection): Model<any> {
  return db.models.Skill ?? db.model('Skill', schema);
}

export interface SkillFileDoc {
  id: string;
  filePath: string;
  content: string;
  createdAt: Date;
  updatedAt: Date;
}

export interface SkillDoc {
  _id: string;
  id: string;
  tenantId: string;
  projectId: string;
  name: string;
  description: string;
  content: string;
  metadata: string | null;
  files: SkillFileDoc[];
  revision: number;
  createdAt: Date;
  updatedAt: Date;
}
