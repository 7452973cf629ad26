import type { App, AppForAuth, AppPublicKey, PendingEvent } from '@platform/contracts';
import { iso, live, outboxOnCreate, outboxOnDelete, outboxOnUpdate, scoped, type Connection, type OutboxRelay } from '@platform/mongo';
import { appModel, type AppDoc, type StoredAppKey } from './app.model';

function toKey(k: StoredAppKey): AppPublicKey {
  return { kid: k.kid, algorithm: k.algorithm, publicKey: k.publicKey, addedAt: iso(k.addedAt)! };
}

export function appKeys(d: AppDoc): AppPublicKey[] {
  return Object.values(d.publicKeys ?? {})
    .map(toKey)
    .sort((a, b) => a.addedAt.localeCompare(b.addedAt) || a.kid.localeCompare(b.kid));
}

export function toApp(d: AppDoc): App {
  const config: App['config'] = { type: d.config.type };
  if (d.type === 'web_client') {
    const wc = d.config.webClient ?? { allowAnonymous: false, allowedDomains: [], audience: null };
    config.webClient = { allowAnonymous: wc.allowAnonymous, allowedDomains: wc.allowedDomains, audience: wc.audience ?? null, publicKeys: appKeys(d) };
  }
  if (d.type === 'support_copilot') config.supportCopilot = { audience: d.config.supportCopilot?.audience ?? null };
  return {
    id: d._id,
    name: d.name,
    description: d.description ?? null,
    prompt: d.prompt ?? null,
    tenantId: d.tenantId,
    projectId: d.projectId,
    type: d.type,
    enabled: d.enabled,
    defaultAgentId: d.defaultAgentId ?? null,
    defaultProjectId: d.defaultProjectId ?? null,
    config,
    createdAt: iso(d.createdAt)!,
    updatedAt: iso(d.updatedAt)!,
    lastUsedAt: iso(d.lastUsedAt) ?? null,
  };
}

export function toAppForAuth(d: AppDoc): AppForAuth {
  const app = toApp(d);
  return {
    id: app.id,
    revision: d.revision,
    tenantId: app.tenantId,
    projectId: app.projectId,
    enabled: app.enabled,
    type: app.type,
    defaultAgentId: app.defaultAgentId,
    defaultProjectId: app.defaultProjectId,
    config: {
      type: app.config.type,
      ...(app.config.webClient
        ? { webClient: { allowAnonymous: app.config.webClient.allowAnonymous, allowedDomains: app.config.webClient.allowedDomains, audience: app.config.webClient.audience } }
        : {}),
      ...(app.config.supportCopilot ? { supportCopilot: app.config.supportCopilot } : {}),
    },
    publicKeys: appKeys(d),
  };
}

type WithOutbox = AppDoc & { outboxSeq?: number; pendingEvents?: Record<string, PendingEvent> };
type Scope = { tenantId: string; projectId?: string };

export type AppRepo = ReturnType<typeof appRepo>;

export function appRepo(db: Connection, relay: () => OutboxRelay) {
  const Model = appModel(db);
  const hidden = { pendingEvents: 0, outboxPending: 0, outboxSeq: 0, outboxDelete: 0 };
  return {
    model: Model,
    async insert(doc: AppDoc, events: PendingEvent[]): Promise<void> {
      const outbox = outboxOnCreate(events);
      await Model.create({ ...doc, ...outbox });
      relay().flush({ _id: doc._id, outboxSeq: 1, pendingEvents: outbox.pendingEvents });
    },
    async findById(scope: Scope, id: string): Promise<AppDoc | null> {
      return Model.findOne({ _id: id, ...scoped(scope), ...live }, hidden).lean<AppDoc>();
    },
    /** For authentication: by id only. */
    async findForAuth(id: string): Promise<AppDoc | null> {
      return Model.findOne({ _id: id, ...live }, hidden).lean<AppDoc>();
    },
    async list(scope: Scope, filter: { type?: string }, page: number, limit: number) {
      const q = { ...scoped(scope), ...live, ...(filter.type ? { type: filter.type } : {}) };
      const [rows, total] = await Promise.all([
        Model.find(q, hidden).sort({ createdAt: -1, _id: 1 }).skip((page - 1) * limit).limit(limit).lean<AppDoc[]>(),
        Model.countDocuments(q),
      ]);
      return { rows, total };
    },
    async tenantHasAny(tenantId: string): Promise<boolean> {
      return (await Model.findOne({ tenantId, ...live }, { _id: 1 }).lean()) !== null;
    },
    /** Writes a change only if nobody changed the app since `current` was read (null: lost the race, or gone). */
    async update(current: AppDoc, change: { set: Record<string, unknown>; unset?: Record<string, 1> }, events: PendingEvent[]): Promise<AppDoc | null> {
      const ops = outboxOnUpdate(events);
      const update: Record<string, unknown> = { $set: { ...change.set, revision: current.revision + 1, ...ops.$set }, $inc: ops.$inc };
      if (change.unset && Object.keys(change.unset).length) update.$unset = change.unset;
      const d = await Model.findOneAndUpdate({ _id: current._id, revision: current.revision, ...live }, update, { new: true }).lean<WithOutbox>();
      if (d) relay().flush(d);
      return d;
    },
    async remove(current: AppDoc, events: PendingEvent[]): Promise<boolean> {
      const ops = outboxOnDelete(events);
      const d = await Model.findOneAndUpdate({ _id: current._id, ...live }, { $set: ops.$set, $inc: ops.$inc }, { new: true }).lean<WithOutbox>();
      if (d) relay().flush(d);
      return d !== null;
    },
    touch(id: string, at: Date) {
      return Model.updateOne({ _id: id, $or: [{ lastUsedAt: null }, { lastUsedAt: { $lt: at } }] }, { $set: { lastUsedAt: at } });
    },
  };
}
