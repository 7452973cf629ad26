import type { ProjectScope, Skill, SkillWithFiles } from '@platform/contracts';
import { iso, scoped, scopedId, type Connection, listPage, projectRecords } from '@platform/mongo';
import { skillModel, type SkillDoc } from './skill.model';

/** A skill as the domain sees it: a plain object (the model's document type stays in data/). */
export interface StoredSkill {
  _id: string;
  id: string;
  tenantId: string;
  projectId: string;
  name: string;
  description: string;
  content: string;
  metadata?: string | null;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
  files: StoredSkillFile[];
}

export interface StoredSkillFile {
  id: string;
  filePath: string;
  content: string;
  createdAt: Date;
  updatedAt: Date;
}

export function toSkill(d: StoredSkill): Skill {
  return {
    id: d.id,
    name: d.name,
    description: d.description,
    content: d.content ?? '',
    metadata: d.metadata ? (JSON.parse(d.metadata) as Record<string, string>) : null,
    createdAt: iso(d.createdAt)!,
    updatedAt: iso(d.updatedAt)!,
  };
}

export function toSkillWithFiles(d: StoredSkill): SkillWithFiles {
  return {
    ...toSkill(d),
    files: (d.files ?? []).map((f) => ({
      id: f.id,
      skillId: d.id,
      filePath: f.filePath,
      content: f.content ?? '',
      createdAt: iso(f.createdAt)!,
      updatedAt: iso(f.updatedAt)!,
    })),
  };
}

export type SkillRepo = ReturnType<typeof skillRepo>;

/**
 * Skills are written only by the management handlers, one writer per skill at a time (the entity lock), and carry
 * no outbox: no other service consumes skill changes.
 */
export function skillRepo(db: Connection) {
  const Model = skillModel(db);
  /** insert (null when the id is taken), findById, and update at the revision read (null when it moved on). */
  const records = projectRecords<SkillDoc, StoredSkill>(Model);
  const listFields = { files: 0 };
  return {
    model: Model,
    ...records,
    /** Skills by id, without files (for sub-agent listings). */
    async findMany(scope: ProjectScope, ids: string[]): Promise<StoredSkill[]> {
      if (!ids.length) return [];
      return Model.find({ _id: { $in: ids.map((id) => scopedId(scope, id)) }, ...scoped(scope) }, listFields).lean();
    },
    async list(scope: ProjectScope, page: number, limit: number) {
      return listPage(
        Model,
        { filter: scoped(scope), sort: { createdAt: -1, _id: 1 }, projection: listFields },
        page,
        limit,
      );
    },
    async remove(current: StoredSkill): Promise<boolean> {
      const r = await Model.deleteOne({ _id: current._id });
      return r.deletedCount === 1;
    },
  };
}
