import type { NatsConnection } from 'nats';
import {
  disableDestinationForDelivery,
  EVENT_SUBJECT_PREFIX,
  listDestinationsForDispatch,
  type DispatchDestination,
  type ProjectScope,
  subjectToken,
  webhookDestinationEvents,
  webhookDestinationsChanged,
} from '@platform/contracts';
import { type ServiceBus, subscribeNotice } from '@platform/bus';
import type { DestinationSource } from '../domain/destinations';

export interface CachedDestinations extends DestinationSource {
  /**
   * True when the project of an event subject (`evt.<tenant>.<project>.…`) is known, from a list fetched within the
   * cache's time, to have no enabled destination: its events need no work. False when that is not known.
   */
  noneEnabled(subject: string): boolean;
  stop(): void;
}

/** A project's list as fetched; `enabled` is known once the list has arrived. */
interface CacheEntry {
  at: number;
  value: Promise<DispatchDestination[]>;
  enabled?: boolean;
  /** A newer list is being fetched to replace this one. */
  refreshing?: boolean;
}

/**
 * The dispatcher's view of destinations: asked from management over NATS per project, and dropped at once when
 * management announces a change of that project's destinations. A list older than `ttlMs` (a bound on how long a lost
 * announcement can go unnoticed) is fetched again in the background while it is still used: a delivery never waits for
 * management to list what it already knows, and one that is slow or stalled holds up no delivery.
 */
export function managementDestinations(bus: ServiceBus, nc: NatsConnection, ttlMs: number): CachedDestinations {
  const cache = new Map<string, CacheEntry>();
  // The subject's own tokens, so an event's project is found from its subject without reading the message.
  const keyOf = (s: ProjectScope) => `${subjectToken(s.tenantId)}.${subjectToken(s.projectId)}`;
  const drop = (scope: ProjectScope) => {
    cache.delete(keyOf(scope));
  };
  // An announcement that cannot be read drops every list.
  const dropAll = { onInvalid: () => cache.clear() };
  // Callbacks, not iterators: each message drops the entry while it is read off the connection, before any event
  // message that came after it on the same connection is looked at. Management announces a change before answering
  // it, so an event accepted after that answer never meets the older list; the `webhook-destination.*` events (published
  // after the answer, from the outbox) drop it again.
  const subs = [
    subscribeNotice(nc, webhookDestinationsChanged, 'webhook-dispatcher', drop, dropAll),
    subscribeNotice(nc, webhookDestinationEvents, 'webhook-dispatcher', drop, dropAll),
  ];
  // Announcements sent while the connection was down are lost: nothing fetched before it came back is trusted.
  void (async () => {
    for await (const s of nc.status()) if (s.type === 'reconnect') cache.clear();
  })().catch(() => undefined);
  const fetchList = (scope: ProjectScope) =>
    bus
      .callInternal(listDestinationsForDispatch, { tenantId: scope.tenantId, projectId: scope.projectId })
      .then((r) => r.destinations);
  /** Fetches a project's list into a new entry; a failed fetch leaves no entry behind (the next lookup asks again). */
  const load = (key: string, scope: ProjectScope): CacheEntry => {
    const entry: CacheEntry = { at: Date.now(), value: fetchList(scope) };
    cache.set(key, entry);
    entry.value.then(
      (list) => {
        entry.enabled = list.some((d) => d.enabled);
      },
      () => {
        if (cache.get(key) === entry) cache.delete(key);
      },
    );
    return entry;
  };
  /**
   * Replaces a list past its time with a fresh one, unless a change dropped it meanwhile (the fresh list may then be
   * older than the change). A failed fetch drops it: the list is not used further without management's word.
   */
  const refresh = (key: string, scope: ProjectScope, stale: CacheEntry) => {
    stale.refreshing = true;
    const at = Date.now();
    fetchList(scope).then(
      (list) => {
        if (cache.get(key) === stale)
          cache.set(key, { at, value: Promise.resolve(list), enabled: list.some((d) => d.enabled) });
      },
      () => {
        if (cache.get(key) === stale) cache.delete(key);
      },
    );
  };
  const source = {
    async forProject(scope: ProjectScope, opts: { fresh?: boolean } = {}): Promise<DispatchDestination[]> {
      const key = keyOf(scope);
      const hit = cache.get(key);
      if (!opts.fresh && hit) {
        if (Date.now() - hit.at < ttlMs) return hit.value;
        // Past its time but arrived: used while the fresh one is fetched.
        if (hit.enabled !== undefined) {
          if (!hit.refreshing) refresh(key, scope, hit);
          return hit.value;
        }
      }
      return load(key, scope).value;
    },
    noneEnabled(subject: string): boolean {
      const [prefix, tenant, project] = subject.split('.', 3);
      if (prefix !== EVENT_SUBJECT_PREFIX || project === undefined) return false;
      const hit = cache.get(`${tenant}.${project}`);
      return hit !== undefined && hit.enabled === false && Date.now() - hit.at < ttlMs;
    },
    async find(scope: ProjectScope, id: string): Promise<DispatchDestination | null> {
      const cached = (await source.forProject(scope)).find((d) => d.id === id);
      if (cached) return cached;
      return (await source.forProject(scope, { fresh: true })).find((d) => d.id === id) ?? null;
    },
    invalidate(scope: ProjectScope) {
      cache.delete(keyOf(scope));
    },
    stop() {
      for (const sub of subs) sub.unsubscribe();
    },
  };
  return source;
}

/** Tells management to turn a destination off, with the reason users will see as `disabledReason`. */
export function managementDisabler(bus: ServiceBus) {
  return async (scope: ProjectScope, id: string, reason: string): Promise<void> => {
    await bus.callInternal(disableDestinationForDelivery, {
      tenantId: scope.tenantId,
      projectId: scope.projectId,
      id,
      reason,
    });
  };
}
