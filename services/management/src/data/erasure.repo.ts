import type { Erasure, ErasureService, ProjectScope } from '@platform/contracts';
import { eraseProjectDocuments, scoped, scopedId, unlessDuplicate, type Connection } from '@platform/mongo';
import { erasureModel, erasurePartModel, type ErasureDoc, type ErasurePartDoc } from './erasure.model';

const isoOf = (d: Date | string) => new Date(d).toISOString();

export function toErasure(d: ErasureDoc, parts: ErasurePartDoc[]): Erasure {
  const doneAt = new Map(parts.map((p) => [p.service, p.doneAt]));
  return {
    id: d.id,
    kind: d.kind,
    conversationId: d.conversationId ?? null,
    status: d.status,
    services: d.services.map((service) => {
      const at = doneAt.get(service);
      return {
        service: service as ErasureService,
        state: at ? ('done' as const) : ('pending' as const),
        doneAt: at ? isoOf(at) : null,
      };
    }),
    createdAt: isoOf(d.createdAt),
    completedAt: d.completedAt ? isoOf(d.completedAt) : null,
  };
}

export type ErasureRepo = ReturnType<typeof erasureRepo>;

export function erasureRepo(db: Connection) {
  const Model = erasureModel(db);
  const Parts = erasurePartModel(db);
  const withParts = async (d: ErasureDoc) =>
    toErasure(d, await Parts.find({ ...scoped(d), erasureId: d.id }).lean<ErasurePartDoc[]>());
  return {
    /** Every document of the project in management's database, but the erasure records (what was erased, when). */
    async eraseProjectData(scope: ProjectScope): Promise<number> {
      return eraseProjectDocuments(db, scope);
    },
    async insert(
      scope: ProjectScope,
      job: {
        id: string;
        kind: 'conversation' | 'project';
        conversationId: string | null;
        services: readonly ErasureService[];
      },
    ): Promise<Erasure> {
      const doc: ErasureDoc = {
        _id: scopedId(scope, job.id),
        id: job.id,
        ...scope,
        kind: job.kind,
        conversationId: job.conversationId,
        status: 'pending',
        services: [...job.services],
        createdAt: new Date(),
        completedAt: null,
      };
      await Model.create(doc);
      return toErasure(doc, []);
    },
    async findById(scope: ProjectScope, id: string): Promise<Erasure | null> {
      const d = await Model.findOne({ _id: scopedId(scope, id), ...scoped(scope) }).lean<ErasureDoc>();
      return d ? withParts(d) : null;
    },
    /** The pending job of this kind (and conversation), if one is under way. */
    async findPending(
      scope: ProjectScope,
      kind: 'conversation' | 'project',
      conversationId: string | null,
    ): Promise<Erasure | null> {
      const d = await Model.findOne({ ...scoped(scope), kind, conversationId, status: 'pending' }).lean<ErasureDoc>();
      return d ? withParts(d) : null;
    },
    /** Records that `service` has done its part; the job is done once every service has. Repeating it changes nothing. */
    async markDone(scope: ProjectScope, id: string, service: ErasureService): Promise<Erasure | null> {
      const _id = scopedId(scope, id);
      const d = await Model.findOne({ _id }).lean<ErasureDoc>();
      if (!d) return null;
      await unlessDuplicate(() =>
        Parts.create({ _id: `${_id}:${service}`, ...scope, erasureId: id, service, doneAt: new Date() }),
      );
      const job = await withParts(d);
      if (d.status === 'pending' && job.services.every((s) => s.state === 'done')) {
        const completedAt = new Date();
        await Model.updateOne({ _id, status: 'pending' }, { $set: { status: 'done', completedAt } });
        return { ...job, status: 'done', completedAt: completedAt.toISOString() };
      }
      return job;
    },
  };
}
