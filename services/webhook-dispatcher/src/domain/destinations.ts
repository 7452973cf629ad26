import type { NatsConnection } from 'nats';
import { EVENT_SUBJECT_PREFIX, LIST_DESTINATIONS_FOR_DISPATCH_SUBJECT, type ProjectScope } from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';
import { decode } from '@platform/bus';

/** A destination as the dispatcher needs it (management's record plus delivery internals). */
export interface DispatchDestination {
  id: string;
  tenantId: string;
  projectId: string;
  name: string;
  enabled: boolean;
  eventTypes: string[];
  agentIds: string[];
  evaluatorIds: string[];
  headers: Record<string, string>;
  url: string | null;
  chatappChannelId: string | null;
  secret?: string | null;
}

/**
 * The dispatcher's view of destinations: asked from management over NATS per project, remembered briefly,
 * and dropped at once when a destination-change event for that project passes on the bus.
 */
export function destinationView(bus: ServiceBus, nc: NatsConnection, ttlMs: number) {
  const cache = new Map<string, { at: number; value: Promise<DispatchDestination[]> }>();
  const keyOf = (s: ProjectScope) => `${s.tenantId}\u0000${s.projectId}`;
  const sub = nc.subscribe(`${EVENT_SUBJECT_PREFIX}.*.*.webhook-destination.>`);
  void (async () => {
    for await (const m of sub) {
      try {
        const env = decode<{ tenantId: string; projectId: string }>(m.data);
        cache.delete(keyOf(env));
      } catch {
        cache.clear();
      }
    }
  })();
  return {
    async forProject(scope: ProjectScope): Promise<DispatchDestination[]> {
      const key = keyOf(scope);
      const hit = cache.get(key);
      if (hit && Date.now() - hit.at < ttlMs) return hit.value;
      const value = bus
        .requestWire(LIST_DESTINATIONS_FOR_DISPATCH_SUBJECT, { principal: { kind: 'anonymous' }, params: scope })
        .then((r) => (r.body as { destinations: DispatchDestination[] }).destinations);
      cache.set(key, { at: Date.now(), value });
      value.catch(() => cache.delete(key));
      return value;
    },
    stop() {
      sub.unsubscribe();
    },
  };
}
export type DestinationView = ReturnType<typeof destinationView>;

/** Does this destination take this event? Enabled, subscribed to the type, and in agent (and evaluator) scope. */
export function matches(d: DispatchDestination, eventType: string, agentId: string | null, evaluatorId?: string | null): boolean {
  if (!d.enabled || !d.eventTypes.includes(eventType)) return false;
  if (d.agentIds.length && (!agentId || !d.agentIds.includes(agentId))) return false;
  if (evaluatorId !== undefined && d.evaluatorIds.length && (!evaluatorId || !d.evaluatorIds.includes(evaluatorId))) return false;
  return true;
}
