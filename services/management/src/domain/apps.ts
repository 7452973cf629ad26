import {
  appCreated,
  appDeleted,
  appUpdated,
  pendingEvent,
  type App,
  type AppForAuth,
  type AppCreate,
  type AppPublicKey,
  type AppPublicKeyCreate,
  type AppUpdate,
  type AppChanged,
  type Principal,
  type ProjectScope,
} from '@platform/contracts';
import { AppError } from '@platform/problems';
import { randomId } from '@platform/secrets';
import {
  appKeys,
  toApp,
  toAppForAuth,
  type AppRepo,
  kidField,
  type StoredApp,
  type StoredAppConfig,
  type StoredAppKey,
} from '../data/app.repo';
import { normalizePublicKey } from './app-keys';

export interface AppDeps {
  apps: AppRepo;
  /** Tells every process that caches apps (run-auth) the app's new state at once. */
  announceChanged(change: AppChanged): void;
}

const notFound = () => new AppError('not_found', 'App not found');
const MAX_KEYS = 20;

/** The caller's role as the app list reports it: `owner` for the platform admin, else the access token's role. */
export function callerRole(principal: Principal): string {
  if (principal.kind === 'admin') return 'owner';
  if (principal.kind === 'user') return principal.role;
  return 'viewer';
}

function checkedKeys(input: AppPublicKeyCreate[] | undefined, now: Date): Record<string, StoredAppKey> {
  const out: Record<string, StoredAppKey> = {};
  for (const [i, k] of (input ?? []).entries()) {
    if (out[kidField(k.kid)]) {
      throw new AppError('conflict', `A public key with kid "${k.kid}" is given twice`, {
        errors: [{ pointer: `/config/webClient/publicKeys/${i}/kid`, detail: 'must be unique' }],
      });
    }
    out[kidField(k.kid)] = {
      kid: k.kid,
      algorithm: k.algorithm,
      publicKey: normalizePublicKey(k.algorithm, k.publicKey),
      addedAt: now,
    };
  }
  return out;
}

export async function addApp(deps: AppDeps, scope: ProjectScope, input: AppCreate): Promise<App> {
  const now = new Date();
  const config: StoredAppConfig = { type: input.type };
  if (input.type === 'web_client' && input.config.webClient) {
    const wc = input.config.webClient;
    config.webClient = {
      allowAnonymous: wc.allowAnonymous ?? false,
      allowedDomains: wc.allowedDomains,
      audience: wc.audience ?? null,
    };
  }
  if (input.type === 'support_copilot')
    config.supportCopilot = { audience: input.config.supportCopilot?.audience ?? null };
  const doc: StoredApp = {
    _id: `app_${randomId(16)}`,
    ...scope,
    name: input.name,
    description: input.description ?? null,
    prompt: input.prompt ?? null,
    type: input.type,
    enabled: input.enabled ?? true,
    defaultAgentId: input.defaultAgentId ?? null,
    defaultProjectId: input.defaultProjectId ?? null,
    config,
    publicKeys: checkedKeys(input.config.webClient?.publicKeys, now),
    revision: 1,
    createdAt: now,
    updatedAt: now,
  };
  const app = toApp(doc);
  await deps.apps.insert(doc, [pendingEvent(appCreated, randomId(24), scope, { app })]);
  deps.announceChanged({ appId: doc._id, revision: doc.revision, app: toAppForAuth(doc) });
  return app;
}

async function current(deps: AppDeps, scope: ProjectScope, appId: string): Promise<StoredApp> {
  const doc = await deps.apps.findById(scope, appId);
  if (!doc) throw notFound();
  return doc;
}

export async function findApp(deps: AppDeps, scope: ProjectScope, appId: string): Promise<App> {
  const [app] = await deps.apps.toApps([await current(deps, scope, appId)]);
  return app!;
}

/** Applies `change` to the app under an optimistic revision check (retried when another change won the race). */
async function mutate(
  deps: AppDeps,
  scope: ProjectScope,
  appId: string,
  change: (doc: StoredApp) => { set: Record<string, unknown>; unset?: Record<string, 1> },
): Promise<StoredApp> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const doc = await current(deps, scope, appId);
    const c = change(doc);
    const set = { ...c.set, updatedAt: new Date() };
    const plain = Object.fromEntries(Object.entries(set).filter(([k]) => !k.includes('.')));
    const next: StoredApp = { ...doc, ...(plain as Partial<StoredApp>), publicKeys: { ...doc.publicKeys } };
    for (const [path, value] of Object.entries(set))
      if (path.startsWith('publicKeys.')) next.publicKeys[path.slice(11)] = value as unknown as StoredAppKey;
    for (const path of Object.keys(c.unset ?? {}))
      if (path.startsWith('publicKeys.')) delete next.publicKeys[path.slice(11)];
    const saved = await deps.apps.update(doc, { set, unset: c.unset }, [
      pendingEvent(appUpdated, randomId(24), scope, { app: toApp(next) }),
    ]);
    if (saved) {
      deps.announceChanged({ appId, revision: saved.revision, app: toAppForAuth(saved) });
      return saved;
    }
  }
  throw new AppError('conflict', 'The app changed concurrently; retry');
}

export async function changeApp(deps: AppDeps, scope: ProjectScope, appId: string, input: AppUpdate): Promise<App> {
  const saved = await mutate(deps, scope, appId, (doc) => {
    const set: Record<string, unknown> = {};
    for (const key of ['name', 'description', 'prompt', 'defaultAgentId', 'defaultProjectId', 'enabled'] as const) {
      if (input[key] !== undefined) set[key] = input[key];
    }
    const cfg = input.config;
    if (cfg) {
      if (cfg.type !== undefined && cfg.type !== doc.type) {
        throw new AppError(
          'unprocessable_entity',
          'config.type must equal the app type (the type of an app cannot change)',
          { errors: [{ pointer: '/config/type', detail: `must be ${doc.type}` }] },
        );
      }
      if (cfg.webClient) {
        if (doc.type !== 'web_client')
          throw new AppError('unprocessable_entity', 'webClient applies to web_client apps only', {
            errors: [{ pointer: '/config/webClient', detail: 'not a web_client app' }],
          });
        const wc = doc.config.webClient ?? { allowAnonymous: false, allowedDomains: [], audience: null };
        set.config = { ...doc.config, ...(set.config as object | undefined) };
        (set.config as StoredAppConfig).webClient = {
          allowAnonymous: cfg.webClient.allowAnonymous ?? wc.allowAnonymous,
          allowedDomains: cfg.webClient.allowedDomains ?? wc.allowedDomains,
          audience: cfg.webClient.audience !== undefined ? cfg.webClient.audience : (wc.audience ?? null),
        };
      }
      if (cfg.supportCopilot) {
        if (doc.type !== 'support_copilot')
          throw new AppError('unprocessable_entity', 'supportCopilot applies to support_copilot apps only', {
            errors: [{ pointer: '/config/supportCopilot', detail: 'not a support_copilot app' }],
          });
        if (cfg.supportCopilot.audience !== undefined)
          set.config = { ...doc.config, supportCopilot: { audience: cfg.supportCopilot.audience } };
      }
    }
    return { set };
  });
  const [app] = await deps.apps.toApps([saved]);
  return app!;
}

export async function removeApp(deps: AppDeps, scope: ProjectScope, appId: string): Promise<void> {
  const doc = await current(deps, scope, appId);
  const removed = await deps.apps.remove(doc, [pendingEvent(appDeleted, randomId(24), scope, { id: appId })]);
  if (!removed) throw notFound();
  deps.announceChanged({ appId, revision: doc.revision + 1, app: null });
}

export async function listAppKeysOf(deps: AppDeps, scope: ProjectScope, appId: string): Promise<AppPublicKey[]> {
  return appKeys(await current(deps, scope, appId));
}

export async function addAppKeyTo(
  deps: AppDeps,
  scope: ProjectScope,
  appId: string,
  input: AppPublicKeyCreate,
): Promise<AppPublicKey> {
  const publicKey = normalizePublicKey(input.algorithm, input.publicKey);
  const field = kidField(input.kid);
  const key: StoredAppKey = { kid: input.kid, algorithm: input.algorithm, publicKey, addedAt: new Date() };
  await mutate(deps, scope, appId, (doc) => {
    if (doc.publicKeys?.[field])
      throw new AppError('conflict', `The app already has a public key with kid "${input.kid}"`, {
        errors: [{ pointer: '/kid', detail: 'must be unique per app' }],
      });
    if (Object.keys(doc.publicKeys ?? {}).length >= MAX_KEYS)
      throw new AppError('unprocessable_entity', `An app holds at most ${MAX_KEYS} public keys; remove one first`);
    return { set: { [`publicKeys.${field}`]: key } };
  });
  return { kid: key.kid, algorithm: key.algorithm, publicKey, addedAt: key.addedAt.toISOString() };
}

export async function removeAppKey(deps: AppDeps, scope: ProjectScope, appId: string, kid: string): Promise<void> {
  const field = kidField(kid);
  await mutate(deps, scope, appId, (doc) => {
    if (!doc.publicKeys?.[field]) throw new AppError('not_found', 'Public key not found');
    return { set: {}, unset: { [`publicKeys.${field}`]: 1 } };
  });
}

/** The app with its auth configuration and keys (for run-auth and the credential gateway); null when unknown. */
export async function findAppForAuth(deps: AppDeps, appId: string): Promise<AppForAuth | null> {
  const doc = await deps.apps.findForAuth(appId);
  return doc ? toAppForAuth(doc) : null;
}
