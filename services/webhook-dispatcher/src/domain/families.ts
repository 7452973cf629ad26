import {
  agentDeleted,
  agentUpdated,
  evaluationFailed,
  eventCreated,
  feedbackCreated,
  parseEventData,
  triggerInvoked,
  webhookEvents,
  type EventDef,
  type EventEnvelope,
} from '@platform/contracts';

/** The body POSTed to a receiver (upstream's envelope). */
export interface WebhookEnvelope {
  type: string;
  timestamp: string;
  tenantId: string;
  projectId: string;
  agentId: string | null;
  agentName?: string;
  data: unknown;
}

/** What routing needs from an event: its agent scope, its evaluator (evaluation.failed only) and the body. */
export interface RoutedEvent {
  type: string;
  agentId: string | null;
  /** Defined only for events scoped by evaluator. */
  evaluatorId?: string | null;
  /** The run event's own id (`event.created` only), so its deliveries can be found by it. */
  runEventId: string | null;
  envelope: WebhookEnvelope;
}

/** An event whose payload does not match its declaration; it is logged and dropped, never retried forever. */
export class MalformedEvent extends Error {}

const byName = new Map<string, EventDef>(webhookEvents.map((d) => [d.name, d]));

function str(v: unknown): string | null {
  return typeof v === 'string' && v.length ? v : null;
}

/**
 * Routes a platform event to the webhook world, or null when it is not to be delivered (`event.created`
 * without an agent scope or resolved ref). Each family says where its agent scope lives.
 */
export function routeEvent(env: EventEnvelope<unknown>): RoutedEvent | null {
  const def = byName.get(env.type);
  if (!def) return null;
  let payload: Record<string, unknown>;
  try {
    payload = parseEventData(def, env.data) as Record<string, unknown>;
  } catch (err) {
    throw new MalformedEvent(`${env.type} ${env.id} does not match its declaration: ${(err as Error).message}`);
  }
  const raw = (env.data ?? {}) as Record<string, unknown>;
  let agentId: string | null;
  let evaluatorId: string | null | undefined;
  let runEventId: string | null = null;
  let data: unknown = raw;
  if (def === eventCreated) {
    const p = payload as ReturnType<typeof eventCreated.payload.parse>;
    if (!p.dispatch) return null;
    agentId = p.event.agentId;
    runEventId = p.event.id;
    data = { event: p.event };
  } else if (def === feedbackCreated) {
    const p = payload as ReturnType<typeof feedbackCreated.payload.parse>;
    agentId = str(p.feedback.agentId) ?? str((raw.conversation as { agentId?: unknown } | undefined)?.agentId);
  } else if (def === evaluationFailed) {
    const p = payload as ReturnType<typeof evaluationFailed.payload.parse>;
    agentId = str(p.conversation.agentId);
    evaluatorId = p.evaluator.id;
  } else if (def === agentUpdated || def === agentDeleted) {
    agentId = (payload as ReturnType<typeof agentUpdated.payload.parse>).agent.id;
  } else if (def === triggerInvoked) {
    agentId = (payload as ReturnType<typeof triggerInvoked.payload.parse>).agentId;
  } else {
    agentId = str((payload.conversation as { agentId?: unknown } | undefined)?.agentId);
  }
  const agentName = str(raw.agentName);
  if (agentName !== null && data === raw) {
    const { agentName: _omit, ...rest } = raw;
    data = rest;
  }
  const envelope: WebhookEnvelope = {
    type: env.type,
    timestamp: env.occurredAt,
    tenantId: env.tenantId,
    projectId: env.projectId,
    agentId,
    ...(agentName !== null ? { agentName } : {}),
    data,
  };
  return { type: env.type, agentId, ...(evaluatorId !== undefined ? { evaluatorId } : {}), runEventId, envelope };
}
