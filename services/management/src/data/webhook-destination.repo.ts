import type { DispatchDestination, PendingEvent, ProjectScope, WebhookDestination } from '@platform/contracts';
import { unlessDuplicate, iso, loadedJson, scoped, scopedId, storedJson, type Connection } from '@platform/mongo';
import { live, outboxOnCreate, outboxOnDelete, outboxOnUpdate, type OutboxRelay } from '@platform/outbox';
import { webhookDestinationModel } from './webhook-destination.model';

/** A webhook destination as the domain sees it: a plain object (the model's document type stays in data/). */
export interface StoredWebhookDestination {
  _id: string;
  id: string;
  tenantId: string;
  projectId: string;
  name: string;
  description?: string | null;
  enabled: boolean;
  eventTypes: string[];
  agentIds: string[];
  evaluatorIds: string[];
  url?: string | null;
  chatappChannelId?: string | null;
  disabledReason?: string | null;
  secret?: string | null;
  previousSecret?: string | null;
  previousSecretExpiresAt?: Date | null;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
  headers: string | Record<string, string>;
}

export function toWebhookDestination(d: StoredWebhookDestination): WebhookDestination {
  return {
    id: d.id,
    name: d.name,
    description: d.description ?? null,
    enabled: d.enabled,
    eventTypes: d.eventTypes,
    agentIds: d.agentIds ?? [],
    evaluatorIds: d.evaluatorIds ?? [],
    headers: loadedJson(d.headers ?? {}),
    url: d.url ?? null,
    chatappChannelId: d.chatappChannelId ?? null,
    disabledReason: d.disabledReason ?? null,
    createdAt: iso(d.createdAt)!,
    updatedAt: iso(d.updatedAt)!,
  };
}

/** The dispatcher's view: the public record plus the sealed secrets (they stay sealed on the bus). */
export function toDispatchDestination(d: StoredWebhookDestination): DispatchDestination {
  return {
    ...toWebhookDestination(d),
    tenantId: d.tenantId,
    projectId: d.projectId,
    sealedSecret: d.secret ?? null,
    sealedPreviousSecret: d.previousSecret ?? null,
    previousSecretExpiresAt: iso(d.previousSecretExpiresAt) ?? null,
  };
}


export type WebhookDestinationRepo = ReturnType<typeof webhookDestinationRepo>;

export function webhookDestinationRepo(db: Connection, relay: OutboxRelay) {
  const Model = webhookDestinationModel(db);
  const hidden = { pendingEvents: 0, outboxPending: 0, outboxSeq: 0, outboxDelete: 0 };
  return {
    model: Model,
    /** Null when the id is taken. */
    async insert(doc: Omit<StoredWebhookDestination, '_id'>, events: (d: StoredWebhookDestination) => PendingEvent[]): Promise<StoredWebhookDestination | null> {
      const full: StoredWebhookDestination = { _id: scopedId(doc, doc.id), ...doc };
      const outbox = outboxOnCreate(events(full));
      // Header names may start with `$` or hold a `.`: such a map is stored as JSON text.
      if (!(await unlessDuplicate(() => Model.create({ ...full, headers: storedJson(full.headers), ...outbox })))) return null;
      relay.flush({ _id: full._id, outboxSeq: 1, pendingEvents: outbox.pendingEvents });
      return full;
    },
    async findById(scope: ProjectScope, id: string): Promise<StoredWebhookDestination | null> {
      return Model.findOne({ _id: scopedId(scope, id), ...scoped(scope), ...live }, hidden).lean();
    },
    async list(scope: ProjectScope, filter: { agentId?: string }, page: number, limit: number) {
      const q = { ...scoped(scope), ...live, ...(filter.agentId ? { agentIds: filter.agentId } : {}) };
      const [rows, total] = await Promise.all([
        Model.find(q, hidden).sort({ createdAt: -1, _id: 1 }).skip((page - 1) * limit).limit(limit).lean(),
        Model.countDocuments(q),
      ]);
      return { rows, total };
    },
    /** Every destination of a project (for the dispatcher). */
    async allOfProject(scope: ProjectScope): Promise<StoredWebhookDestination[]> {
      return Model.find({ ...scoped(scope), ...live }, hidden).limit(1000).lean();
    },
    async update(scope: ProjectScope, id: string, set: Partial<StoredWebhookDestination>, events: (d: StoredWebhookDestination) => PendingEvent[], current: StoredWebhookDestination) {
      const next = { ...current, ...set, revision: current.revision + 1 };
      const ops = outboxOnUpdate(events(next));
      const d = await relay.exclusive([current._id], () =>
        Model.findOneAndUpdate(
          { _id: scopedId(scope, id), revision: current.revision, ...live },
          { $set: { ...set, ...(set.headers ? { headers: storedJson(set.headers) } : {}), revision: next.revision, ...ops.$set }, $inc: ops.$inc },
          { new: true },
        )
          .lean()
          .exec(),
      );
      if (d) relay.flush(d);
      return d;
    },
    async remove(scope: ProjectScope, id: string, events: (d: StoredWebhookDestination) => PendingEvent[]): Promise<boolean> {
      const current = await this.findById(scope, id);
      if (!current) return false;
      const ops = outboxOnDelete(events(current));
      const d = await relay.exclusive([current._id], () =>
        Model.findOneAndUpdate({ _id: current._id, ...live }, { $set: ops.$set, $inc: ops.$inc }, { new: true }).lean().exec(),
      );
      if (d) relay.flush(d);
      return d !== null;
    },
  };
}
