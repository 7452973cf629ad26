import type { Erasure, ErasureService, ProjectScope } from '@platform/contracts';
import { eraseProjectDocuments, scoped, scopedId, type Connection } from '@platform/mongo';
import { ERASURES_COLLECTION, erasureModel, type ErasureDoc } from './erasure.model';

export function toErasure(d: ErasureDoc): Erasure {
  return {
    id: d.id,
    kind: d.kind,
    conversationId: d.conversationId ?? null,
    status: d.status,
    services: Object.entries(d.services).map(([service, s]) => ({ service: service as ErasureService, state: s.state, doneAt: s.doneAt ? new Date(s.doneAt).toISOString() : null })),
    createdAt: new Date(d.createdAt).toISOString(),
    completedAt: d.completedAt ? new Date(d.completedAt).toISOString() : null,
  };
}

export type ErasureRepo = ReturnType<typeof erasureRepo>;

export function erasureRepo(db: Connection) {
  const Model = erasureModel(db);
  return {
    /** Every document of the project in management's database, but the erasure jobs (the record of what was erased). */
    async eraseProjectData(scope: ProjectScope): Promise<number> {
      return eraseProjectDocuments(db, scope, { keep: [ERASURES_COLLECTION] });
    },
    async insert(scope: ProjectScope, job: { id: string; kind: 'conversation' | 'project'; conversationId: string | null; services: readonly ErasureService[] }): Promise<Erasure> {
      const doc: ErasureDoc = {
        _id: scopedId(scope, job.id),
        id: job.id,
        ...scope,
        kind: job.kind,
        conversationId: job.conversationId,
        status: 'pending',
        services: Object.fromEntries(job.services.map((s) => [s, { state: 'pending' as const, doneAt: null }])),
        createdAt: new Date(),
        completedAt: null,
      };
      await Model.create(doc);
      return toErasure(doc);
    },
    async findById(scope: ProjectScope, id: string): Promise<Erasure | null> {
      const d = await Model.findOne({ _id: scopedId(scope, id), ...scoped(scope) }).lean<ErasureDoc>();
      return d ? toErasure(d) : null;
    },
    /** The pending job of this kind (and conversation), if one is under way. */
    async findPending(scope: ProjectScope, kind: 'conversation' | 'project', conversationId: string | null): Promise<Erasure | null> {
      const d = await Model.findOne({ ...scoped(scope), kind, conversationId, status: 'pending' }).lean<ErasureDoc>();
      return d ? toErasure(d) : null;
    },
    /** Records that `service` has done its part; the job is done once every service has. Repeating it changes nothing. */
    async markDone(scope: ProjectScope, id: string, service: ErasureService): Promise<Erasure | null> {
      const _id = scopedId(scope, id);
      const path = `services.${service}`;
      const now = new Date();
      await Model.updateOne({ _id, [`${path}.state`]: 'pending' }, { $set: { [path]: { state: 'done', doneAt: now } } });
      const d = await Model.findOne({ _id }).lean<ErasureDoc>();
      if (!d) return null;
      if (d.status === 'pending' && Object.values(d.services).every((s) => s.state === 'done')) {
        await Model.updateOne({ _id, status: 'pending' }, { $set: { status: 'done', completedAt: now } });
        return toErasure({ ...d, status: 'done', completedAt: now });
      }
      return toErasure(d);
    },
  };
}
