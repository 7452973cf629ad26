import type { JsMsg, NatsConnection } from 'nats';
import { z } from 'zod';
import { consumeDurable, type RunningConsumer } from '@platform/bus';
import { EventEnvelope, PLATFORM_EVENTS_STREAM, eventFilter, type EventDef } from '@platform/contracts';

/**
 * The typed consumer of platform events: one durable JetStream consumer on one declared event, optionally
 * narrowed to a tenant or a project.
 *
 * ```ts
 * const sub = await subscribe(nc, eventCreated, { durable: 'billing-usage', tenantId: 'acme' }, async (e) => {
 *   await recordUsage(e.tenantId, e.data.event);   // e.data is typed from the event's zod schema
 * });
 * ```
 *
 * - A message is acknowledged only after the handler resolves; a handler that throws gets the message again
 *   after `retryDelayMs` (nak with delay), so nothing is lost while the consumer's own store is down.
 * - A message whose envelope or payload does not match the declaration is terminated (never redelivered) and
 *   logged once: a broken message cannot block the ones behind it.
 * - Delivery is at least once: de-duplicate by `event.id` (it is also the JetStream Nats-Msg-Id).
 * - Replicas that use the same `durable` share the messages; different durables each get every message.
 */
export interface SubscribeOptions {
  /** Durable consumer name, `<service>-<purpose>` (letters, digits, `-`, `_`). The position survives restarts. */
  durable: string;
  /** Only this tenant's events (`evt.<tenant>.*.<name>.v<N>`). */
  tenantId?: string;
  /** Only this project's events (give `tenantId` too). */
  projectId?: string;
  /** Where a new durable starts: every event still in the stream (default) or only events published from now on. */
  deliverPolicy?: 'all' | 'new';
  /** Events handled at once by this process (default 8). */
  concurrency?: number;
  /** Delay before a failed event is redelivered (default 1000 ms). */
  retryDelayMs?: number;
  /** How long the handler may take before the event is redelivered (default 30 s). */
  ackWaitMs?: number;
  /** Give up after this many deliveries (default: never). */
  maxDeliver?: number;
  /** The stream (default PLATFORM_EVENTS). */
  stream?: string;
}

/** What a handler receives: the envelope with `data` typed by the declaration's payload schema. */
export type EventOf<D extends EventDef> = EventEnvelope<z.infer<D['payload']>>;

export type EventHandler<D extends EventDef> = (event: EventOf<D>, msg: JsMsg) => Promise<void> | void;

export type Subscription = RunningConsumer;

const DURABLE = /^[A-Za-z0-9_-]{1,64}$/;

/** The schema a message of `def` must match: the envelope, its type and version, and the payload. */
export function envelopeSchema<D extends EventDef>(def: D) {
  return EventEnvelope.extend({ type: z.literal(def.name), version: z.literal(def.version), data: def.payload });
}

/** The subject filter a subscription uses. */
export function subscriptionFilter(def: EventDef, opts: Pick<SubscribeOptions, 'tenantId' | 'projectId'>): string {
  if (opts.projectId && !opts.tenantId)
    throw new Error('subscribe: projectId needs tenantId (project ids are unique within a tenant)');
  return eventFilter(def, opts);
}

export async function subscribe<D extends EventDef>(
  nc: NatsConnection,
  def: D,
  opts: SubscribeOptions,
  handler: EventHandler<D>,
): Promise<Subscription> {
  if (!DURABLE.test(opts.durable))
    throw new Error(`subscribe: durable "${opts.durable}" must be 1-64 letters, digits, - or _`);
  const parse = envelopeSchema(def) as unknown as z.ZodType<EventOf<D>>;
  return consumeDurable<EventOf<D>>(nc, {
    stream: opts.stream ?? PLATFORM_EVENTS_STREAM,
    durable: opts.durable,
    filterSubjects: [subscriptionFilter(def, opts)],
    deliverPolicy: opts.deliverPolicy,
    concurrency: opts.concurrency ?? 8,
    nakDelayMs: opts.retryDelayMs ?? 1000,
    ackWaitMs: opts.ackWaitMs,
    maxDeliver: opts.maxDeliver,
    parse,
    terminateInvalid: true,
    handler: async (event, msg) => {
      await handler(event, msg);
    },
  });
}
