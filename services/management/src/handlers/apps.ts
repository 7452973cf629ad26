import {
  addAppKey,
  appUsed,
  createApp,
  deleteApp,
  deleteAppKey,
  getApp,
  getAppForAuth,
  listAppKeys,
  listApps,
  listTenantApps,
  pagination,
  updateApp,
} from '@platform/contracts';
import { reply, type ServiceBus, subscribeNotice } from '@platform/bus';
import { getLogger } from '@platform/logger';
import {
  addApp,
  addAppKeyTo,
  callerRole,
  changeApp,
  findApp,
  findAppForAuth,
  listAppKeysOf,
  removeApp,
  removeAppKey,
  type AppDeps,
} from '../domain/apps';

const log = getLogger('management.apps');

export function registerAppHandlers(bus: ServiceBus, deps: AppDeps) {
  const list = async (
    scope: { tenantId: string; projectId?: string },
    query: { page: number; limit: number; type?: string },
    principal: Parameters<typeof callerRole>[0],
  ) => {
    const [{ rows, total }, tenantHasAnyApps] = await Promise.all([
      deps.apps.list(scope, { type: query.type }, query.page, query.limit),
      deps.apps.tenantHasAny(scope.tenantId),
    ]);
    return {
      data: await deps.apps.toApps(rows),
      pagination: pagination(query.page, query.limit, total, rows.length),
      role: callerRole(principal),
      tenantHasAnyApps,
    };
  };
  bus.handle(listTenantApps, async ({ params, query }, ctx) =>
    list({ tenantId: params.tenantId }, query, ctx.principal),
  );
  bus.handle(listApps, async ({ params, query }, ctx) => list(params, query, ctx.principal));
  bus.handle(createApp, async ({ params, body }) => ({ data: { app: await addApp(deps, params, body) } }));
  bus.handle(getApp, async ({ params }) => ({ data: await findApp(deps, params, params.appId) }));
  bus.handle(updateApp, async ({ params, body }) => ({ data: await changeApp(deps, params, params.appId, body) }));
  bus.handle(deleteApp, async ({ params }) => {
    await removeApp(deps, params, params.appId);
    return reply(204);
  });
  bus.handle(listAppKeys, async ({ params }) => ({ data: await listAppKeysOf(deps, params, params.appId) }));
  bus.handle(addAppKey, async ({ params, body }) => ({ data: await addAppKeyTo(deps, params, params.appId, body) }));
  bus.handle(deleteAppKey, async ({ params }) => {
    await removeAppKey(deps, params, params.appId, params.kid);
    return reply(204);
  });

  /** Internal: the app with its auth configuration and keys, for run-auth and the credential gateway. */
  bus.serveInternal(getAppForAuth, async ({ appId }) => ({ app: await findAppForAuth(deps, appId) }));

  /** run-auth reports use (at most once a minute per app and process); one management replica records it. */
  subscribeNotice(bus.nc, appUsed, 'management', async (u) => {
    try {
      await deps.apps.touch(u.appId, new Date(u.at));
    } catch (err) {
      log.warn({ err }, 'could not record app use');
    }
  });
}
