import { request } from 'undici';
import { eventCreated, parseEventData, type EventEnvelope, type RunEvent } from '@platform/contracts';
import { getLogger } from '@platform/logger';
import type { DeliveryRepo } from '../data/delivery.repo';
import { matches, type DestinationView, type DispatchDestination } from './destinations';

const log = getLogger('webhook-dispatcher.deliver');

export interface DeliverDeps {
  deliveries: DeliveryRepo;
  destinations: DestinationView;
  timeoutMs: number;
}

/** The body POSTed to a receiver. */
export interface WebhookEnvelope {
  type: string;
  timestamp: string;
  tenantId: string;
  projectId: string;
  agentId: string | null;
  data: unknown;
}

export class DeliveryFailed extends Error {}

async function post(deps: DeliverDeps, d: DispatchDestination, body: WebhookEnvelope) {
  const started = Date.now();
  try {
    const res = await request(d.url!, {
      method: 'POST',
      headers: { ...d.headers, 'content-type': 'application/json', 'user-agent': 'Platform-Webhooks/1.0' },
      body: JSON.stringify(body),
      headersTimeout: deps.timeoutMs,
      bodyTimeout: deps.timeoutMs,
      maxRedirections: 0,
    } as Parameters<typeof request>[1]);
    await res.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    return { at: new Date(), statusCode: res.statusCode, ok, error: ok ? null : `receiver answered ${res.statusCode}`, durationMs: Date.now() - started };
  } catch (err) {
    return { at: new Date(), statusCode: null, ok: false, error: (err as Error).message || 'network error', durationMs: Date.now() - started };
  }
}

/**
 * Delivers one `event.created` to every matching destination. A delivery already recorded as done is not
 * sent again (redeliveries after a crash); a failed one makes the whole message fail so JetStream retries it.
 */
export async function deliverEventCreated(deps: DeliverDeps, envelope: EventEnvelope<unknown>): Promise<void> {
  const { event, dispatch } = parseEventData(eventCreated, envelope.data) as { event: RunEvent; dispatch: boolean };
  if (!dispatch) return;
  const destinations = (await deps.destinations.forProject(envelope)).filter((d) => matches(d, 'event.created', event.agentId));
  let failed = 0;
  await Promise.all(
    destinations.map(async (d) => {
      const id = `${envelope.id}:${d.id}`;
      const prior = await deps.deliveries.find(id);
      if (prior && (prior.status === 'delivered' || prior.status === 'skipped')) return;
      const key = { _id: id, tenantId: envelope.tenantId, projectId: envelope.projectId, destinationId: d.id, eventId: envelope.id, eventType: 'event.created' };
      if (!d.url) {
        await deps.deliveries.recordAttempt(key, { at: new Date(), statusCode: null, ok: false, error: 'chat channel delivery is not available yet', durationMs: 0 }, 'skipped');
        return;
      }
      const body: WebhookEnvelope = {
        type: 'event.created',
        timestamp: envelope.occurredAt,
        tenantId: envelope.tenantId,
        projectId: envelope.projectId,
        agentId: event.agentId,
        data: { event },
      };
      const attempt = await post(deps, d, body);
      await deps.deliveries.recordAttempt(key, attempt, attempt.ok ? 'delivered' : 'pending');
      log.info({ destinationId: d.id, eventId: envelope.id, statusCode: attempt.statusCode, ok: attempt.ok, durationMs: attempt.durationMs }, 'delivery attempt');
      if (!attempt.ok) failed++;
    }),
  );
  if (failed) throw new DeliveryFailed(`${failed} deliveries failed`);
}
