import type { ApiKey, ProjectScope, PendingEvent } from '@platform/contracts';
import { iso, listPage, scoped, type Connection } from '@platform/mongo';
import { live, outboxOnDelete, outboxOnUpdate, type OutboxRelay } from '@platform/outbox';
import { apiKeyModel, type ApiKeyDoc } from './api-key.model';

export function toApiKey(d: ApiKeyDoc): ApiKey {
  return {
    id: d._id,
    name: d.name,
    agentId: d.agentId,
    publicId: d._id,
    keyPrefix: d.keyPrefix,
    expiresAt: iso(d.expiresAt) ?? null,
    lastUsedAt: iso(d.lastUsedAt) ?? null,
    createdAt: iso(d.createdAt)!,
    updatedAt: iso(d.updatedAt)!,
  };
}

export type ApiKeyRepo = ReturnType<typeof apiKeyRepo>;

export function apiKeyRepo(db: Connection, relay: OutboxRelay) {
  const Model = apiKeyModel(db);
  const hidden = { keyHash: 0, pendingEvents: 0, outboxPending: 0, outboxSeq: 0, outboxDelete: 0 };
  return {
    model: Model,
    async insert(doc: ApiKeyDoc): Promise<ApiKey> {
      await Model.create(doc);
      return toApiKey(doc);
    },
    async findById(scope: ProjectScope, id: string): Promise<ApiKey | null> {
      const d = await Model.findOne({ _id: id, ...scoped(scope), ...live }, hidden).lean<ApiKeyDoc>();
      return d ? toApiKey(d) : null;
    },
    /** For verification: by public id only, with the hash. */
    async findForVerify(publicId: string): Promise<ApiKeyDoc | null> {
      return Model.findOne({ _id: publicId, ...live }, { pendingEvents: 0 }).lean<ApiKeyDoc>();
    },
    async list(scope: ProjectScope, filter: { agentId?: string }, page: number, limit: number) {
      const q = { ...scoped(scope), ...live, ...(filter.agentId ? { agentId: filter.agentId } : {}) };
      const { rows, total } = await listPage<ApiKeyDoc>(Model, q, hidden, { createdAt: -1, _id: 1 }, page, limit);
      return { rows: rows.map(toApiKey), total };
    },
    async update(scope: ProjectScope, id: string, set: Partial<ApiKeyDoc>, events: PendingEvent[]): Promise<ApiKey | null> {
      const ops = outboxOnUpdate(events);
      const d = await relay.exclusive([id], () =>
        Model.findOneAndUpdate({ _id: id, ...scoped(scope), ...live }, { $set: { ...set, ...ops.$set }, $inc: ops.$inc }, { new: true })
          .lean<ApiKeyDoc & { outboxSeq?: number; pendingEvents?: Record<string, PendingEvent> }>()
          .exec(),
      );
      if (d) relay.flush(d);
      return d ? toApiKey(d) : null;
    },
    async remove(scope: ProjectScope, id: string, events: PendingEvent[]): Promise<boolean> {
      const ops = outboxOnDelete(events);
      const d = await relay.exclusive([id], () =>
        Model.findOneAndUpdate({ _id: id, ...scoped(scope), ...live }, { $set: ops.$set, $inc: ops.$inc }, { new: true }).lean<any>().exec(),
      );
      if (d) relay.flush(d);
      return d !== null;
    },
    touch(id: string, at: Date) {
      return relay.exclusive([id], () => Model.updateOne({ _id: id }, { $set: { lastUsedAt: at } }).exec());
    },
  };
}
