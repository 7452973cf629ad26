import type { Evaluator, EvaluatorKind, ProjectScope } from '@platform/contracts';
import { iso, scoped, scopedId, type Connection, unlessDuplicate, listPage } from '@platform/mongo';
import { evaluatorModel, type EvaluatorDoc } from './evaluator.model';

export function toEvaluator(d: EvaluatorDoc): Evaluator {
  return {
    id: d.id,
    name: d.name,
    description: d.description ?? null,
    kind: d.kind as EvaluatorKind,
    config: JSON.parse(d.config),
    agentIds: d.agentIds ?? [],
    createdAt: iso(d.createdAt)!,
    updatedAt: iso(d.updatedAt)!,
  };
}

export type EvaluatorRepo = ReturnType<typeof evaluatorRepo>;

export function evaluatorRepo(db: Connection) {
  const Model = evaluatorModel(db);
  return {
    model: Model,
    /** Throws a duplicate-key error when the id is taken. */
    /** Null when the id is taken. */
    async insert(doc: Omit<EvaluatorDoc, '_id'>): Promise<Evaluator | null> {
      const full = { _id: scopedId(doc, doc.id), ...doc };
      if (!(await unlessDuplicate(() => Model.collection.insertOne(full as never)))) return null;
      return toEvaluator(full);
    },
    async findById(scope: ProjectScope, id: string): Promise<Evaluator | null> {
      const d = await Model.findOne({ _id: scopedId(scope, id), ...scoped(scope) }).lean();
      return d ? toEvaluator(d) : null;
    },
    async findMany(scope: ProjectScope, ids: string[]): Promise<Evaluator[]> {
      const rows = await Model.find({ _id: { $in: ids.map((id) => scopedId(scope, id)) }, ...scoped(scope) }).lean();
      return rows.map(toEvaluator);
    },
    /** Every evaluator of the project (a project holds a modest number of evaluators). */
    async all(scope: ProjectScope, max = 500): Promise<Evaluator[]> {
      const rows = await Model.find(scoped(scope)).sort({ createdAt: 1, _id: 1 }).limit(max).lean();
      return rows.map(toEvaluator);
    },
    async list(scope: ProjectScope, page: number, limit: number) {
      const q = scoped(scope);
      const { rows, total } = await listPage(Model, { filter: q, sort: { createdAt: -1, _id: 1 } }, page, limit);
      return { rows: rows.map(toEvaluator), total };
    },
    async update(
      scope: ProjectScope,
      id: string,
      set: Partial<Omit<EvaluatorDoc, '_id' | 'id' | 'tenantId' | 'projectId'>>,
    ): Promise<Evaluator | null> {
      const d = await Model.findOneAndUpdate(
        { _id: scopedId(scope, id), ...scoped(scope) },
        { $set: set },
        { new: true },
      ).lean();
      return d ? toEvaluator(d) : null;
    },
    async remove(scope: ProjectScope, id: string): Promise<boolean> {
      const r = await Model.deleteOne({ _id: scopedId(scope, id), ...scoped(scope) });
      return r.deletedCount === 1;
    },
  };
}
