import { randomUUID } from 'node:crypto';
import {
  AUTH_METHODS,
  eventCreated,
  pendingEvent,
  type Principal,
  type RunEvent,
  type RunEventCreate,
} from '@platform/contracts';
import { AppError } from '@platform/problems';
import { sha256Hex } from '@platform/secrets';
import type { RunEventRepo } from '../data/run-event.repo';

export interface RunEventDeps {
  events: RunEventRepo;
}

type RunPrincipal = Extract<Principal, { kind: 'run' }>;

const PLACEHOLDER_IDENTITIES = new Set(['ANONYMOUS', 'COOKIED']);

/**
 * Placeholder identities (`identificationType` ANONYMOUS or COOKIED) are dropped; from any other value the
 * `identificationType` marker is removed. Contents are otherwise stored as given.
 */
export function filterUserProperties(
  value: Record<string, unknown> | null | undefined,
): Record<string, unknown> | null {
  if (!value) return null;
  const kind = value.identificationType;
  if (typeof kind === 'string' && PLACEHOLDER_IDENTITIES.has(kind.toUpperCase())) return null;
  if (!('identificationType' in value)) return value;
  const { identificationType: _marker, ...rest } = value;
  return rest;
}

/**
 * A caller-supplied value always wins. When absent: the message anchor's recorded value, then the
 * conversation's (given, or derived from the message), else null. Never merged, never taken from the credential.
 */
export async function resolveUserProperties(
  deps: RunEventDeps,
  scope: { tenantId: string; projectId: string },
  input: RunEventCreate,
) {
  if (input.userProperties !== undefined) return filterUserProperties(input.userProperties);
  if (input.messageId) {
    const fromMessage = await deps.events.latestUserProperties(scope, 'messageId', input.messageId);
    if (fromMessage) return filterUserProperties(fromMessage);
  }
  const conversationId =
    input.conversationId ?? (input.messageId ? await deps.events.conversationOfMessage(scope, input.messageId) : null);
  if (conversationId) {
    const fromConversation = await deps.events.latestUserProperties(scope, 'conversationId', conversationId);
    if (fromConversation) return filterUserProperties(fromConversation);
  }
  return null;
}

/** Credentials an end user holds (a browser's app JWT or anonymous session, the support copilot's OAuth bearer). */
const END_USER_METHODS = new Set<string>([AUTH_METHODS.appJwt, AUTH_METHODS.anonymous, AUTH_METHODS.supportCopilot]);

/**
 * What an end-user credential is answered: the stored event's id, time and server metadata, with the data fields
 * as this request sent them (`userProperties` after the placeholder filter, null when not sent). The stored row keeps
 * the spec's resolution from the anchors, but anyone can get an anonymous session and name another user's
 * conversation or message (or, on a replay, another identity's event id): the answer never carries what the caller
 * did not send. API keys and playground tokens (held by the tenant) get the stored row as it is.
 */
export function runEventAsSeenBy(p: RunPrincipal, input: RunEventCreate, stored: RunEvent): RunEvent {
  if (!END_USER_METHODS.has(p.authMethod)) return stored;
  return {
    ...stored,
    type: input.type,
    agentId: input.agentId ?? p.agentId ?? null,
    conversationId: input.conversationId ?? null,
    messageId: input.messageId ?? null,
    properties: input.properties ?? null,
    userProperties: input.userProperties === undefined ? null : filterUserProperties(input.userProperties),
    metadata: input.metadata ?? null,
  };
}

export async function recordRunEvent(
  deps: RunEventDeps,
  principal: Principal,
  input: RunEventCreate,
): Promise<{ created: boolean; event: RunEvent }> {
  if (principal.kind !== 'run') throw new AppError('unauthorized', 'A run-API credential is required');
  const p: RunPrincipal = principal;
  const scope = { tenantId: p.tenantId, projectId: p.projectId };
  const id = input.id ?? randomUUID();
  const agentId = input.agentId ?? p.agentId ?? null;
  const now = new Date();
  const userProperties = await resolveUserProperties(deps, scope, input);
  const dispatch = Boolean(agentId && p.ref);
  const stored = await deps.events.insertOnce(
    {
      id,
      ...scope,
      type: input.type,
      agentId,
      conversationId: input.conversationId ?? null,
      messageId: input.messageId ?? null,
      properties: input.properties ?? null,
      userProperties,
      metadata: input.metadata ?? null,
      serverMetadata: { authMethod: p.authMethod },
      createdAt: now,
      updatedAt: now,
    },
    dispatch,
  );
  return { created: stored.created, event: runEventAsSeenBy(p, input, stored.event) };
}

/**
 * The event.created of a stored run event. Its id is derived from the row's key and its time is the row's, so the
 * sweep that rebuilds it after a crash publishes the same message, which JetStream drops if it went out already.
 */
export function runEventEvents(event: RunEvent, dispatch: boolean) {
  const id = sha256Hex(`event.created:${event.tenantId}:${event.projectId}:${event.id}`).slice(0, 40);
  return [
    pendingEvent(
      eventCreated,
      id,
      { tenantId: event.tenantId, projectId: event.projectId },
      { event, dispatch },
      event.createdAt,
    ),
  ];
}
