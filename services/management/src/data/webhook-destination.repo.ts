import type { DispatchDestination, PendingEvent, ProjectScope, WebhookDestination } from '@platform/contracts';
import { iso, loadedJson, scoped, scopedId, storedJson, type Connection, listPage } from '@platform/mongo';
import type { Outbox } from '@platform/outbox';
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

export function webhookDestinationRepo(db: Connection, outbox: Outbox) {
  const Model = webhookDestinationModel(db);
  const writer = outbox.of(Model);
  const { hidden, live } = writer;
  return {
    model: Model,
    /** Null when the id is taken. */
    async insert(
      doc: Omit<StoredWebhookDestination, '_id'>,
      events: (d: StoredWebhookDestination) => PendingEvent[],
    ): Promise<StoredWebhookDestination | null> {
      const full: StoredWebhookDestination = { _id: scopedId(doc, doc.id), ...doc };
      // Header names may start with `$` or hold a `.`: such a map is stored as JSON text.
      const outcome = await writer.insert({ ...full, headers: storedJson(full.headers) }, events(full));
      return outcome === 'inserted' ? full : null;
    },
    async findById(scope: ProjectScope, id: string): Promise<StoredWebhookDestination | null> {
      return Model.findOne({ _id: scopedId(scope, id), ...scoped(scope), ...live }, hidden).lean();
    },
    async list(scope: ProjectScope, filter: { agentId?: string }, page: number, limit: number) {
      const q = { ...scoped(scope), ...live, ...(filter.agentId ? { agentIds: filter.agentId } : {}) };
      return listPage(Model, { filter: q, sort: { createdAt: -1, _id: 1 }, projection: hidden }, page, limit);
    },
    /** Every destination of a project (for the dispatcher). */
    async allOfProject(scope: ProjectScope): Promise<StoredWebhookDestination[]> {
      return Model.find({ ...scoped(scope), ...live }, hidden)
        .limit(1000)
        .lean();
    },
    async update(
      scope: ProjectScope,
      id: string,
      set: Partial<StoredWebhookDestination>,
      events: (d: StoredWebhookDestination) => PendingEvent[],
      current: StoredWebhookDestination,
    ) {
      const next = { ...current, ...set, revision: current.revision + 1 };
      return writer.update(
        { _id: scopedId(scope, id), revision: current.revision },
        { $set: { ...set, ...(set.headers ? { headers: storedJson(set.headers) } : {}), revision: next.revision } },
        events(next),
      );
    },
    async remove(
      scope: ProjectScope,
      id: string,
      events: (d: StoredWebhookDestination) => PendingEvent[],
    ): Promise<boolean> {
      const current = await this.findById(scope, id);
      if (!current) return false;
      return (await writer.remove({ _id: current._id }, events(current))) !== null;
    },
  };
}
