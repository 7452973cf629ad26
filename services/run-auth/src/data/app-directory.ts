import { type AppChanged, type AppForAuth, appUsed, getAppForAuth } from '@platform/contracts';
import { publishNotice, type ServiceBus } from '@platform/bus';

const MAX_ENTRIES = 10_000;

function bounded<K, V>(map: Map<K, V>) {
  if (map.size > MAX_ENTRIES) map.delete(map.keys().next().value!);
}

/**
 * Apps as run-auth sees them: asked from management over NATS and remembered for `ttlMs`.
 * Management announces every change with the app's new state and revision (`apply`): the copy is replaced at once,
 * and a later read that is older than an announced revision (a lagging database read) is ignored in favour of it.
 */
export function appDirectory(bus: ServiceBus, ttlMs: number) {
  const cache = new Map<string, { app: AppForAuth | null; at: number }>();
  const announced = new Map<string, { revision: number; app: AppForAuth | null }>();
  const lastUsed = new Map<string, number>();
  return {
    async get(appId: string): Promise<AppForAuth | null> {
      const hit = cache.get(appId);
      if (hit && Date.now() - hit.at < ttlMs) return hit.app;
      let { app } = await bus.callInternal(getAppForAuth, { appId });
      const known = announced.get(appId);
      if (known && (app === null || app.revision < known.revision)) app = known.app;
      if (ttlMs > 0) {
        cache.set(appId, { app, at: Date.now() });
        bounded(cache);
      }
      return app;
    },
    /** A change announced by management. */
    apply(change: AppChanged) {
      const known = announced.get(change.appId);
      if (known && known.revision > change.revision) return;
      announced.set(change.appId, { revision: change.revision, app: change.app });
      bounded(announced);
      cache.set(change.appId, { app: change.app, at: Date.now() });
      bounded(cache);
    },
    clear() {
      cache.clear();
    },
    /** Reports use of an app to management (at most once a minute per app from this process). */
    markUsed(appId: string) {
      const now = Date.now();
      if ((lastUsed.get(appId) ?? 0) > now - 60_000) return;
      lastUsed.set(appId, now);
      bounded(lastUsed);
      publishNotice(bus.nc, appUsed, { appId, at: new Date(now).toISOString() });
    },
  };
}
export type AppDirectory = ReturnType<typeof appDirectory>;
