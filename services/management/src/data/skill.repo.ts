import type { PendingEvent, ProjectScope, Skill, SkillWithFiles } from '@platform/contracts';
import { iso, live, outboxOnCreate, outboxOnDelete, outboxOnUpdate, scoped, scopedId, type Connection, type OutboxRelay } from '@platform/mongo';
import { skillModel, type SkillDoc } from './skill.model';

export function toSkill(d: SkillDoc): Skill {
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

export function toSkillWithFiles(d: SkillDoc): SkillWithFiles {
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

type WithOutbox = SkillDoc & { outboxSeq?: number; pendingEvents?: Record<string, PendingEvent> };

export type SkillRepo = ReturnType<typeof skillRepo>;

export function skillRepo(db: Connection, relay: () => OutboxRelay) {
  const Model = skillModel(db);
  const hidden = { pendingEvents: 0, outboxPending: 0, outboxSeq: 0, outboxDelete: 0 };
  const listFields = { files: 0, ...hidden };
  return {
    model: Model,
    async insert(doc: Omit<SkillDoc, '_id'>, events: PendingEvent[]): Promise<SkillDoc> {
      const full: SkillDoc = { _id: scopedId(doc, doc.id), ...doc };
      const outbox = outboxOnCreate(events);
      await Model.create({ ...full, ...outbox });
      relay().flush({ _id: full._id, outboxSeq: 1, pendingEvents: outbox.pendingEvents });
      return full;
    },
    async findById(scope: ProjectScope, id: string): Promise<SkillDoc | null> {
      return Model.findOne({ _id: scopedId(scope, id), ...scoped(scope), ...live }, hidden).lean<SkillDoc>();
    },
    /** Skills by id, without files (for sub-agent listings). */
    async findMany(scope: ProjectScope, ids: string[]): Promise<SkillDoc[]> {
      if (!ids.length) return [];
      return Model.find({ _id: { $in: ids.map((id) => scopedId(scope, id)) }, ...scoped(scope), ...live }, listFields).lean<SkillDoc[]>();
    },
    async list(scope: ProjectScope, page: number, limit: number) {
      const q = { ...scoped(scope), ...live };
      const [rows, total] = await Promise.all([
        Model.find(q, listFields).sort({ createdAt: -1, _id: 1 }).skip((page - 1) * limit).limit(limit).lean<SkillDoc[]>(),
        Model.countDocuments(q),
      ]);
      return { rows, total };
    },
    /** Writes the new state if nobody changed the skill since `current` was read; null when someone did. */
    async update(current: SkillDoc, set: Partial<SkillDoc>, events: PendingEvent[]): Promise<SkillDoc | null> {
      const ops = outboxOnUpdate(events);
      const d = await Model.findOneAndUpdate(
        { _id: current._id, revision: current.revision, ...live },
        { $set: { ...set, revision: current.revision + 1, ...ops.$set }, $inc: ops.$inc },
        { new: true },
      ).lean<WithOutbox>();
      if (d) relay().flush(d);
      return d;
    },
    async remove(current: SkillDoc, events: PendingEvent[]): Promise<boolean> {
      const ops = outboxOnDelete(events);
      const d = await Model.findOneAndUpdate({ _id: current._id, ...live }, { $set: ops.$set, $inc: ops.$inc }, { new: true }).lean<WithOutbox>();
      if (d) relay().flush(d);
      return d !== null;
    },
  };
}
