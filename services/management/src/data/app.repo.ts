import type { App, AppForAuth, AppPublicKey, PendingEvent } from '@platform/contracts';
import { iso, scoped, type Connection, listPage } from '@platform/mongo';
import type { Outbox } from '@platform/outbox';
import { appModel, appUsageModel, type StoredAppConfig, type StoredAppKey } from './app.model';
export type { StoredAppConfig, StoredAppKey };
export { kidField } from './app.model';

/** An app as the domain sees it: a plain object (the model's document type stays in data/). */
export interface StoredApp {
  _id: string;
  tenantId: string;
  projectId: string;
  name: string;
  description?: string | null;
  prompt?: string | null;
  enabled: boolean;
  defaultAgentId?: string | null;
  defaultProjectId?: string | null;
  revision: number;
  createdAt: Date;
  updatedAt: Date;
  type: 'web_client' | 'api' | 'support_copilot';
  config: StoredAppConfig;
  publicKeys: Record<string, StoredAppKey>;
}

function toKey(k: StoredAppKey): AppPublicKey {
  return { kid: k.kid, algorithm: k.algorithm, publicKey: k.publicKey, addedAt: iso(k.addedAt)! };
}

export function appKeys(d: StoredApp): AppPublicKey[] {
  return Object.values(d.publicKeys ?? {})
    .map(toKey)
    .sort((a, b) => a.addedAt.localeCompare(b.addedAt) || a.kid.localeCompare(b.kid));
}

export function toApp(d: StoredApp, lastUsedAt: Date | null = null): App {
  const config: App['config'] = { type: d.config.type };
  if (d.type === 'web_client') {
    const wc = d.config.webClient ?? { allowAnonymous: false, allowedDomains: [], audience: null };
    config.webClient = {
      allowAnonymous: wc.allowAnonymous,
      allowedDomains: wc.allowedDomains,
      audience: wc.audience ?? null,
      publicKeys: appKeys(d),
    };
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
    lastUsedAt: iso(lastUsedAt) ?? null,
  };
}

export function toAppForAuth(d: StoredApp): AppForAuth {
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
        ? {
            webClient: {
              allowAnonymous: app.config.webClient.allowAnonymous,
              allowedDomains: app.config.webClient.allowedDomains,
              audience: app.config.webClient.audience,
            },
          }
        : {}),
      ...(app.config.supportCopilot ? { supportCopilot: app.config.supportCopilot } : {}),
    },
    publicKeys: appKeys(d),
  };
}

type Scope = { tenantId: string; projectId?: string };

export type AppRepo = ReturnType<typeof appRepo>;

/**
 * Every change of an app is a write conditional on its `revision`, its events written in the same document through the
 * outbox: a change that loses the race writes nothing, its events included.
 */
export function appRepo(db: Connection, outbox: Outbox) {
  const Model = appModel(db);
  const Usage = appUsageModel(db);
  const writer = outbox.of(Model);
  const { hidden, live } = writer;

  const lastUsed = async (ids: string[]): Promise<Map<string, Date>> => {
    if (!ids.length) return new Map();
    const rows = await Usage.find({ _id: { $in: ids } }).lean();
    return new Map(rows.map((r) => [r._id, r.lastUsedAt]));
  };

  return {
    model: Model,
    async insert(doc: StoredApp, events: PendingEvent[]): Promise<void> {
      if ((await writer.insert({ ...doc }, events)) === 'duplicate') throw new Error(`app ${doc._id} exists already`);
    },
    async findById(scope: Scope, id: string): Promise<StoredApp | null> {
      return Model.findOne({ _id: id, ...scoped(scope), ...live }, hidden).lean();
    },
    /** For authentication: by id only. */
    async findForAuth(id: string): Promise<StoredApp | null> {
      return Model.findOne({ _id: id, ...live }, hidden).lean();
    },
    async toApps(docs: StoredApp[]): Promise<App[]> {
      const used = await lastUsed(docs.map((d) => d._id));
      return docs.map((d) => toApp(d, used.get(d._id) ?? null));
    },
    async list(scope: Scope, filter: { type?: string }, page: number, limit: number) {
      const q = { ...scoped(scope), ...live, ...(filter.type ? { type: filter.type } : {}) };
      return listPage(Model, { filter: q, sort: { createdAt: -1, _id: 1 }, projection: hidden }, page, limit);
    },
    async tenantHasAny(tenantId: string): Promise<boolean> {
      return (await Model.findOne({ tenantId, ...live }, { _id: 1 }).lean()) !== null;
    },
    /** Writes a change only if nobody changed the app since `current` was read (null: lost the race, or gone). */
    async update(
      current: StoredApp,
      change: { set: Record<string, unknown>; unset?: Record<string, 1> },
      events: PendingEvent[],
    ): Promise<StoredApp | null> {
      const revision = current.revision + 1;
      const unset = change.unset && Object.keys(change.unset).length ? { $unset: change.unset } : {};
      return writer.update(
        { _id: current._id, revision: current.revision },
        { $set: { ...change.set, revision }, ...unset },
        events,
      );
    },
    async remove(current: StoredApp, events: PendingEvent[]): Promise<boolean> {
      const done = (await writer.remove({ _id: current._id, revision: current.revision }, events)) !== null;
      if (done) await Usage.deleteOne({ _id: current._id }).catch(() => undefined);
      return done;
    },
    async touch(id: string, at: Date) {
      await Usage.updateOne(
        { _id: id, $or: [{ lastUsedAt: { $lt: at } }, { lastUsedAt: { $exists: false } }] },
        { $set: { lastUsedAt: at } },
        { upsert: true },
      ).catch((err: { code?: number }) => {
        if (err?.code !== 11000) throw err; // a newer time is already recorded
      });
    },
  };
}
