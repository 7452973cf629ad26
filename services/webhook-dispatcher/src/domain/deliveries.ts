import { pendingEvent, webhookDeliveryFailed, webhookDeliverySucceeded, type DispatchDestination, type EventEnvelope, type PendingEvent, type ProjectScope } from '@platform/contracts';
import { getLogger } from '@platform/logger';
import { AppError } from '@platform/problems';
import { randomId, sha256Hex } from '@platform/secrets';
import type { Claim, DeliveryRepo, NewDelivery } from '../data/delivery.repo';
import type { DeliveryDoc } from '../data/delivery.model';
import type { DestinationHealthRepo, DestinationKey } from '../data/destination-health.repo';
import { matches, signingSecrets, type DestinationSource } from './destinations';
import { routeEvent, type WebhookEnvelope } from './families';
import { nextRetryDelay, type RetryPolicy } from './retry-policy';
import { signedHeaders } from './signing';
import type { SendResult, Transports } from './transport';

const log = getLogger('webhook-dispatcher.deliveries');

export interface DeliveryDeps {
  deliveries: DeliveryRepo;
  health: DestinationHealthRepo;
  destinations: DestinationSource;
  transports: Transports;
  /** Opens a sealed signing secret (SecretBox with ENCRYPTION_KEY). */
  openSecret(sealed: string): string;
  /** Asks management to turn a destination off. */
  disableDestination(scope: ProjectScope, id: string, reason: string): Promise<void>;
  retry: RetryPolicy;
  disableAfterFailingMs: number;
  testTimeoutMs: number;
}

/** The `webhook-id` of an event's delivery to a destination: stable, so a redelivered event maps to the same record. */
export function deliveryId(scope: ProjectScope, eventId: string, destinationId: string): string {
  return `msg_${sha256Hex(`${scope.tenantId}\u0000${scope.projectId}\u0000${eventId}\u0000${destinationId}`).slice(0, 32)}`;
}

/**
 * A platform event arrived: record one pending delivery per matching destination. Only after this resolves is
 * the JetStream message acknowledged, so an event is never lost between the stream and the deliveries collection.
 * Returns how many deliveries were scheduled.
 */
/**
 * Records the deliveries of an event. With `claim`, the ones inserted now come back claimed, for the caller to send
 * at once; a redelivered event finds them recorded and leaves them to their claim or the poller.
 */
export async function scheduleEventDeliveries(deps: DeliveryDeps, env: EventEnvelope<unknown>, claim?: Claim): Promise<{ scheduled: number; claimed: DeliveryDoc[] }> {
  const routed = routeEvent(env);
  if (!routed) return { scheduled: 0, claimed: [] };
  const scope = { tenantId: env.tenantId, projectId: env.projectId };
  const targets = (await deps.destinations.forProject(scope)).filter((d) => matches(d, routed.type, routed.agentId, routed.evaluatorId));
  if (!targets.length) return { scheduled: 0, claimed: [] };
  const body = JSON.stringify(routed.envelope);
  const docs: NewDelivery[] = targets.map((d) => ({
    _id: deliveryId(scope, env.id, d.id),
    ...scope,
    destinationId: d.id,
    eventId: env.id,
    eventType: routed.type,
    body,
  }));
  const claimed = await deps.deliveries.schedule(docs, new Date(), claim);
  return { scheduled: docs.length, claimed };
}

const OUR_HEADERS = new Set(['content-type', 'user-agent', 'webhook-id', 'webhook-timestamp', 'webhook-signature', 'host', 'content-length']);

/** The destination's own headers first; ours (content type, agent, Standard Webhooks) win over them. */
function requestHeaders(custom: Record<string, string>, signed: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(custom)) if (!OUR_HEADERS.has(k.toLowerCase())) out[k] = v;
  return { ...out, 'content-type': 'application/json', 'user-agent': 'Platform-Webhooks/1.0', ...signed };
}

/** One line a person reads in the chat channel. */
export function chatText(envelope: WebhookEnvelope, destinationName: string): string {
  const data = (envelope.data ?? {}) as Record<string, any>;
  const agent = envelope.agentName ?? envelope.agentId;
  const suffix = agent ? ` (agent ${agent})` : '';
  switch (envelope.type) {
    case 'event.created':
      return `New event "${data.event?.type ?? 'unknown'}" in project ${envelope.projectId}${suffix}`;
    case 'feedback.created':
      return `New ${data.feedback?.type ?? ''} feedback on conversation ${data.feedback?.conversationId ?? 'unknown'}${suffix}${data.feedback?.details ? `: ${data.feedback.details}` : ''}`;
    case 'evaluation.failed':
      return `Evaluation failed: evaluator "${data.evaluator?.name ?? data.evaluator?.id ?? 'unknown'}" on conversation ${data.conversation?.id ?? 'unknown'}${suffix}`;
    case 'test':
      return `Test delivery to webhook destination "${destinationName}" in project ${envelope.projectId}`;
    default:
      return `${envelope.type}: conversation ${data.conversation?.id ?? 'unknown'}${suffix}${data.error?.message ? `: ${data.error.message}` : ''}`;
  }
}

/** Sends one attempt of a delivery to its destination, by HTTP (signed) or through the chat app. */
export async function sendOnce(deps: DeliveryDeps, dest: DispatchDestination, d: Pick<DeliveryDoc, '_id' | 'body' | 'tenantId' | 'projectId'>, timeoutMs?: number): Promise<SendResult> {
  if (dest.url) {
    let secrets: string[];
    try {
      secrets = signingSecrets(dest, deps.openSecret);
    } catch {
      return { kind: 'retryable', statusCode: null, durationMs: 0, error: "the signing secret could not be opened (this dispatcher's ENCRYPTION_KEY differs from management's)" };
    }
    return deps.transports.http({ url: dest.url, headers: requestHeaders(dest.headers, signedHeaders(d._id, d.body, secrets)), body: d.body, timeoutMs });
  }
  if (dest.chatappChannelId) {
    const envelope = JSON.parse(d.body) as WebhookEnvelope;
    return deps.transports.chat({ tenantId: d.tenantId, projectId: d.projectId, channelId: dest.chatappChannelId, text: chatText(envelope, dest.name), payload: envelope });
  }
  return { kind: 'permanent', statusCode: null, durationMs: 0, error: 'the destination has neither url nor chatappChannelId' };
}

/** What a claimed delivery needs next, decided by the worker. */
export type DeliveryRun =
  | { outcome: 'attempted'; result: SendResult; status: DeliveryDoc['status']; nextAttemptAt: Date | null }
  | { outcome: 'cancelled'; reason: string }
  | { outcome: 'deferred' };

/**
 * Works one claimed delivery: checks the destination is still there and enabled, sends, records the attempt and
 * its consequence (delivered, retry at a time, failed), and keeps the destination's health (410 and failing for
 * days turn it off). `sent` is called as soon as the receiver has answered (or the attempt ended without an answer).
 */
export async function runDelivery(deps: DeliveryDeps, doc: DeliveryDoc, token: string, sent: () => void = () => undefined): Promise<DeliveryRun> {
  const scope = { tenantId: doc.tenantId, projectId: doc.projectId };
  let dest: DispatchDestination | null;
  try {
    dest = await deps.destinations.find(scope, doc.destinationId);
  } catch (err) {
    log.warn({ err: (err as Error).message, deliveryId: doc._id }, 'destinations unavailable; delivery deferred');
    await deps.deliveries.release(doc._id, token, new Date(Date.now() + 5_000));
    return { outcome: 'deferred' };
  }
  if (!dest || !dest.enabled) {
    const reason = !dest ? 'cancelled: the destination was deleted' : `cancelled: the destination is disabled${dest.disabledReason ? ` (${dest.disabledReason})` : ''}`;
    await deps.deliveries.cancel(doc._id, token, reason);
    log.info({ deliveryId: doc._id, destinationId: doc.destinationId }, reason);
    return { outcome: 'cancelled', reason };
  }

  const at = new Date();
  const result = await sendOnce(deps, dest, doc);
  sent(); // the receiver is done with it; what follows is ours
  const attempt = doc.attemptCount + 1;
  const delay = result.kind === 'retryable' ? nextRetryDelay(deps.retry, attempt, result.retryAfterMs) : null;
  const status: DeliveryDoc['status'] = result.kind === 'delivered' ? 'delivered' : delay !== null ? 'pending' : 'failed';
  const nextAttemptAt = delay !== null ? new Date(Date.now() + delay) : null;
  const error = result.error && result.kind === 'retryable' && delay === null ? `${result.error}; no attempts left` : result.error;
  const attemptDoc = { attempt, at, statusCode: result.statusCode, ok: result.kind === 'delivered', error, durationMs: result.durationMs };
  const recorded = await deps.deliveries.recordAttempt(doc._id, token, attemptDoc, { status, nextAttemptAt }, outcomeEvents(doc, status, attemptDoc));
  log.info(
    { deliveryId: doc._id, destinationId: doc.destinationId, eventType: doc.eventType, attempt, statusCode: result.statusCode, outcome: result.kind, durationMs: result.durationMs, nextAttemptAt, recorded },
    'delivery attempt',
  );
  await keepHealth(deps, { ...scope, destinationId: dest.id }, result, error);
  return { outcome: 'attempted', result, status, nextAttemptAt };
}

/**
 * `webhook.delivery.succeeded` / `webhook.delivery.failed` once a delivery is finished (nothing while retries are
 * pending). The event id is derived from the delivery, so a second record of the same outcome is a duplicate.
 */
function outcomeEvents(doc: DeliveryDoc, status: DeliveryDoc['status'], last: DeliveryDoc['attempts'][number]): PendingEvent[] {
  if (status !== 'delivered' && status !== 'failed') return [];
  const def = status === 'delivered' ? webhookDeliverySucceeded : webhookDeliveryFailed;
  const delivery = {
    id: doc._id,
    destinationId: doc.destinationId,
    eventId: doc.eventId,
    eventType: doc.eventType,
    attemptCount: last.attempt,
    lastStatusCode: last.statusCode,
    lastError: last.error,
    lastAttempt: { ...last, at: last.at.toISOString() },
  };
  const id = sha256Hex(`${def.name}:${doc._id}`).slice(0, 40);
  return [pendingEvent(def, id, { tenantId: doc.tenantId, projectId: doc.projectId }, { delivery })];
}

/** Destinations seen succeeding lately, so a busy healthy destination costs no health write per delivery. */
const knownHealthy = new Map<string, number>();
const HEALTHY_MEMORY_MS = 60_000;

async function keepHealth(deps: DeliveryDeps, key: DestinationKey, result: SendResult, error: string | null): Promise<void> {
  const id = `${key.tenantId}\u0000${key.projectId}\u0000${key.destinationId}`;
  try {
    if (result.kind === 'delivered') {
      if ((knownHealthy.get(id) ?? 0) > Date.now()) return;
      await deps.health.noteSuccess(key);
      if (knownHealthy.size > 10_000) knownHealthy.clear();
      knownHealthy.set(id, Date.now() + HEALTHY_MEMORY_MS);
      return;
    }
    knownHealthy.delete(id);
    const now = new Date();
    if (result.kind === 'gone') {
      await disable(deps, key, `the receiver answered 410 Gone on ${now.toISOString()}; deliveries stopped`);
      return;
    }
    const since = await deps.health.noteFailure(key, now);
    if (now.getTime() - since.getTime() >= deps.disableAfterFailingMs) {
      await disable(deps, key, `deliveries have failed since ${since.toISOString()} without a success (last: ${error ?? 'unknown error'})`);
    }
  } catch (err) {
    log.warn({ err: (err as Error).message, destinationId: key.destinationId }, 'could not update destination health');
  }
}

/** Records the wish first (it survives a crash), then asks management; the worker retries unconfirmed ones. */
async function disable(deps: DeliveryDeps, key: DestinationKey, reason: string): Promise<void> {
  await deps.health.requestDisable(key, reason);
  log.warn({ destinationId: key.destinationId, tenantId: key.tenantId, projectId: key.projectId, reason }, 'disabling webhook destination');
  await confirmDisable(deps, { ...key, reason });
}

export async function confirmDisable(deps: DeliveryDeps, p: DestinationKey & { reason: string }): Promise<void> {
  try {
    await deps.disableDestination(p, p.destinationId, p.reason);
    await deps.health.disableDone(p, p.reason);
    deps.destinations.invalidate(p);
  } catch (err) {
    log.warn({ err: (err as Error).message, destinationId: p.destinationId }, 'management did not confirm disabling; will retry');
  }
}

/** `POST …/{id}/test`: one signed `test` event, not retried, recorded in the delivery log, outcome answered. */
export async function sendTestDelivery(deps: DeliveryDeps, scope: ProjectScope, destinationId: string) {
  const dest = (await deps.destinations.forProject(scope, { fresh: true })).find((d) => d.id === destinationId);
  if (!dest) throw new AppError('not_found', 'Webhook destination not found');
  const testId = `test_${randomId(20)}`;
  const envelope: WebhookEnvelope = {
    type: 'test',
    timestamp: new Date().toISOString(),
    ...scope,
    agentId: null,
    data: { test: { id: testId, destinationId, message: 'A test delivery: if you can read this, the destination works.' } },
  };
  const doc: NewDelivery = { _id: deliveryId(scope, testId, destinationId), ...scope, destinationId, eventId: testId, eventType: 'test', body: JSON.stringify(envelope) };
  const at = new Date();
  const result = await sendOnce(deps, dest, doc, deps.testTimeoutMs);
  const ok = result.kind === 'delivered';
  await deps.deliveries.insertFinished(doc, { attempt: 1, at, statusCode: result.statusCode, ok, error: result.error, durationMs: result.durationMs }, ok ? 'delivered' : 'failed');
  log.info({ deliveryId: doc._id, destinationId, statusCode: result.statusCode, outcome: result.kind, durationMs: result.durationMs }, 'test delivery');
  return { success: ok, deliveryId: doc._id, statusCode: result.statusCode, error: result.error, durationMs: result.durationMs };
}

/** The delivery log of a destination (404 when the destination does not exist in the project). */
export async function listDestinationDeliveries(
  deps: DeliveryDeps,
  scope: ProjectScope,
  destinationId: string,
  q: { page: number; limit: number; status?: string; eventType?: string },
) {
  const dest = await deps.destinations.find(scope, destinationId);
  if (!dest) throw new AppError('not_found', 'Webhook destination not found');
  return deps.deliveries.list(scope, destinationId, { status: q.status, eventType: q.eventType }, q.page, q.limit);
}
