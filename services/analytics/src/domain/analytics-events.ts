import { randomUUID } from 'node:crypto';
import type { AnalyticsEvent, AnalyticsEventCreate, Principal } from '@platform/contracts';
import { AppError } from '@platform/problems';
import type { AnalyticsEventRepo } from '../data/analytics-event.repo';

export interface AnalyticsEventDeps {
  events: AnalyticsEventRepo;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

export const floorTo = (t: Date, unitMs: number) => new Date(Math.floor(t.getTime() / unitMs) * unitMs);

/**
 * The body may name the project and integration; when it does they must be the key's (403 otherwise), so a key
 * can never write into another project. The stored event always carries the key's project and integration.
 */
function assertKeyScope(p: Extract<Principal, { kind: 'analytics' }>, input: AnalyticsEventCreate, at = ''): void {
  if (input.projectId != null && input.projectId !== p.projectId) {
    throw new AppError('forbidden', "projectId does not match the analytics key's project", {
      errors: [{ pointer: `${at}/projectId`, detail: "must be the analytics key's project (or omitted)" }],
    });
  }
  if (input.integrationId != null && input.integrationId !== p.integrationId) {
    throw new AppError('forbidden', "integrationId does not match the analytics key's integration", {
      errors: [{ pointer: `${at}/integrationId`, detail: "must be the analytics key's integration (or omitted)" }],
    });
  }
}

function anchorOf(input: AnalyticsEventCreate) {
  switch (input.entityType) {
    case 'message':
      return { messageId: input.messageId };
    case 'conversation':
      return { conversationId: input.conversationId };
    case 'search':
      return { searchQuery: input.searchQuery };
  }
}

/** Stores an event once per (tenant, project, id): 201 when new, the stored row unchanged when the id is known. */
export async function recordAnalyticsEvent(
  deps: AnalyticsEventDeps,
  principal: Principal,
  input: AnalyticsEventCreate,
): Promise<{ created: boolean; event: AnalyticsEvent }> {
  if (principal.kind !== 'analytics') throw new AppError('unauthorized', 'An analytics key is required');
  assertKeyScope(principal, input);
  return store(deps, principal, input, new Date());
}

/**
 * Stores the events of a batch, each as `recordAnalyticsEvent` would, in order. Every event's scope is checked before
 * any is stored (all or nothing); the inserts go out together, so the group commit writes them with one insertMany.
 */
export async function recordAnalyticsEvents(
  deps: AnalyticsEventDeps,
  principal: Principal,
  inputs: AnalyticsEventCreate[],
): Promise<Array<{ created: boolean; event: AnalyticsEvent }>> {
  if (principal.kind !== 'analytics') throw new AppError('unauthorized', 'An analytics key is required');
  for (const [i, input] of inputs.entries()) assertKeyScope(principal, input, `/events/${i}`);
  const receivedAt = new Date();
  return Promise.all(inputs.map((input) => store(deps, principal, input, receivedAt)));
}

function store(
  deps: AnalyticsEventDeps,
  principal: Extract<Principal, { kind: 'analytics' }>,
  input: AnalyticsEventCreate,
  receivedAt: Date,
) {
  const createdAt = input.createdAt ? new Date(input.createdAt) : receivedAt;
  return deps.events.insertOnce({
    id: input.id ?? randomUUID(),
    tenantId: principal.tenantId,
    projectId: principal.projectId,
    integrationId: principal.integrationId,
    keyId: principal.keyId,
    entityType: input.entityType,
    type: input.type,
    ...anchorOf(input),
    propertiesJson: input.properties == null ? null : JSON.stringify(input.properties),
    userPropertiesJson: input.userProperties == null ? null : JSON.stringify(input.userProperties),
    createdAt,
    receivedAt,
    bucketMinute: floorTo(createdAt, MINUTE),
    bucketHour: floorTo(createdAt, HOUR),
    bucketDay: floorTo(createdAt, DAY),
  });
}

export const BUCKET_MS = { minute: MINUTE, hour: HOUR, day: DAY } as const;
