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
function assertKeyScope(p: Extract<Principal, { kind: 'analytics' }>, input: AnalyticsEventCreate): void {
  if (input.projectId != null && input.projectId !== p.projectId) {
    throw new AppError('forbidden', "projectId does not match the analytics key's project", {
      errors: [{ pointer: '/projectId', detail: "must be the analytics key's project (or omitted)" }],
    });
  }
  if (input.integrationId != null && input.integrationId !== p.integrationId) {
    throw new AppError('forbidden', "integrationId does not match the analytics key's integration", {
      errors: [{ pointer: '/integrationId', detail: "must be the analytics key's integration (or omitted)" }],
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
export async function recordAnalyticsEvent(deps: AnalyticsEventDeps, principal: Principal, input: AnalyticsEventCreate): Promise<{ created: boolean; event: AnalyticsEvent }> {
  if (principal.kind !== 'analytics') throw new AppError('unauthorized', 'An analytics key is required');
  assertKeyScope(principal, input);
  const receivedAt = new Date();
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
