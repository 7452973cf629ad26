import { z } from 'zod';
import type { ServiceName } from './services';

/** The stream every public platform event lands in. */
export const PLATFORM_EVENTS_STREAM = 'PLATFORM_EVENTS';
export const EVENT_SUBJECT_PREFIX = 'evt';

export interface EventDef<S extends z.ZodType = z.ZodType> {
  /** Dotted name, e.g. `event.created`; also the subject's `<resource>.<action>` part. */
  name: string;
  version: number;
  publisher: ServiceName;
  /** Further services that publish it, the same payload about their own records (the audit log's `audit.recorded`). */
  alsoPublishedBy?: readonly ServiceName[];
  description: string;
  payload: S;
  /** Webhook family this event feeds, if any (the envelope `type` is the name). */
  webhookFamily?: string;
}

export function event<S extends z.ZodType>(def: EventDef<S>): EventDef<S> {
  if (!/^[a-z-]+\.[a-z.-]+$/.test(def.name)) throw new Error(`bad event name ${def.name}`);
  return def;
}

/** Every service that publishes an event: its publisher first. */
export const publishersOf = (def: EventDef): ServiceName[] => [def.publisher, ...(def.alsoPublishedBy ?? [])];

/** NATS subject tokens: anything outside [A-Za-z0-9_-] is %-encoded (ids may contain `.`). */
export function subjectToken(value: string): string {
  return value.replace(/[^A-Za-z0-9_-]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0'));
}

/** `evt.<tenant>.<project>.<resource>.<action>.v<version>` */
export function eventSubject(def: EventDef, tenantId: string, projectId: string): string {
  return `${EVENT_SUBJECT_PREFIX}.${subjectToken(tenantId)}.${subjectToken(projectId)}.${def.name}.v${def.version}`;
}

/** A filter for one event type, optionally narrowed to a tenant or project. */
export function eventFilter(def: EventDef, scope: { tenantId?: string; projectId?: string } = {}): string {
  const t = scope.tenantId ? subjectToken(scope.tenantId) : '*';
  const p = scope.projectId ? subjectToken(scope.projectId) : '*';
  return `${EVENT_SUBJECT_PREFIX}.${t}.${p}.${def.name}.v${def.version}`;
}

/** The envelope every event is published in. */
export const EventEnvelope = z.object({
  id: z.string().describe('Unique event id; also the JetStream Nats-Msg-Id, so a republish is dropped as a duplicate'),
  type: z.string().describe('Event name, e.g. event.created'),
  version: z.number().int(),
  tenantId: z.string(),
  projectId: z.string(),
  occurredAt: z.string().describe('ISO 8601 time of the change'),
  data: z.unknown(),
});
export type EventEnvelope<T = unknown> = Omit<z.infer<typeof EventEnvelope>, 'data'> & { data: T };

export function envelope<T>(
  def: EventDef,
  id: string,
  scope: { tenantId: string; projectId: string },
  data: T,
  occurredAt = new Date().toISOString(),
): EventEnvelope<T> {
  return {
    id,
    type: def.name,
    version: def.version,
    tenantId: scope.tenantId,
    projectId: scope.projectId,
    occurredAt,
    data,
  };
}

/** A pending outbox entry: written with the change it reports, published to JetStream once the change is stored. */
export interface PendingEvent {
  id: string;
  subject: string;
  envelope: EventEnvelope;
  /** W3C trace context of the request that caused the event; the outbox publishes it as the message's header. */
  traceparent?: string;
}

/**
 * A pending event as an outbox stores it: its envelope as JSON text when a key of its data cannot be a field name of
 * the database (user maps such as event properties or header names); the publisher sends either form as the same bytes.
 */
export interface StoredPendingEvent {
  id: string;
  subject: string;
  envelope: EventEnvelope | string;
  traceparent?: string;
}

export function pendingEvent<T>(
  def: EventDef,
  id: string,
  scope: { tenantId: string; projectId: string },
  data: T,
  occurredAt?: string,
): PendingEvent {
  return {
    id,
    subject: eventSubject(def, scope.tenantId, scope.projectId),
    envelope: envelope(def, id, scope, data, occurredAt),
  };
}

/** Validates an envelope's `data` against the event's payload schema. */
export function parseEventData<S extends z.ZodType>(def: EventDef<S>, data: unknown): z.infer<S> {
  return def.payload.parse(data);
}
