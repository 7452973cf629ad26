import type { DispatchDestination, ProjectScope } from '@platform/contracts';

/** Where the dispatcher learns about destinations (management, over NATS, cached). */
export interface DestinationSource {
  forProject(scope: ProjectScope, opts?: { fresh?: boolean }): Promise<DispatchDestination[]>;
  /** One destination; a cache miss is checked against a fresh list before saying it does not exist. */
  find(scope: ProjectScope, id: string): Promise<DispatchDestination | null>;
  invalidate(scope: ProjectScope): void;
}

/** Does this destination take this event? Enabled, subscribed to the type, and in agent (and evaluator) scope. */
export function matches(
  d: DispatchDestination,
  eventType: string,
  agentId: string | null,
  evaluatorId?: string | null,
): boolean {
  if (!d.enabled || !d.eventTypes.includes(eventType)) return false;
  if (d.agentIds.length && (!agentId || !d.agentIds.includes(agentId))) return false;
  if (evaluatorId !== undefined && d.evaluatorIds.length && (!evaluatorId || !d.evaluatorIds.includes(evaluatorId)))
    return false;
  return true;
}

/** The secrets that sign now: the current one, plus the previous one during a rotation's grace period. */
export function signingSecrets(
  d: DispatchDestination,
  open: (sealed: string, d: DispatchDestination) => string,
  now = Date.now(),
): string[] {
  const out: string[] = [];
  if (d.sealedSecret) out.push(open(d.sealedSecret, d));
  if (d.sealedPreviousSecret && d.previousSecretExpiresAt && Date.parse(d.previousSecretExpiresAt) > now)
    out.push(open(d.sealedPreviousSecret, d));
  return out;
}
