import {
  pendingEvent,
  webhookDeliveryFailed,
  webhookDeliverySucceeded,
  type DispatchDestination,
  type EventEnvelope,
  type PendingEvent,
  type ProjectScope,
} from '@platform/contracts';
import { getLogger } from '@platform/logger';
import { AppError } from '@platform/problems';
import { randomId, SealedValueError, sha256Hex } from '@platform/secrets';
import { attemptRowId, type AttemptRepo, type AttemptRow, type DeliveryStatus } from '../data/attempt.repo';
import type { DestinationHealthRepo, DestinationKey } from '../data/destination-health.repo';
import { matches, signingSecrets, type DestinationSource } from './destinations';
import { routeEvent, type WebhookEnvelope } from './families';
import type { DeliveryJob, RetryQueue } from './jobs';
import { nextRetryDelay, type RetryPolicy } from './retry-policy';
import { signedHeaders } from './signing';
import type { SendResult, Transports } from './transport';

const log = getLogger('webhook-dispatcher.deliveries');

export interface DeliveryDeps {
  attempts: AttemptRepo;
  health: DestinationHealthRepo;
  destinations: DestinationSource;
  transports: Transports;
  /** Later attempts wait here until they are due. */
  retries: RetryQueue;
  /** Publishes outcome events (webhook.delivery.succeeded / failed); the event id makes a repeat a duplicate. */
  publish(events: PendingEvent[]): Promise<void>;
  /** Opens a sealed signing secret of destination `d` (SecretBox with ENCRYPTION_KEYS, bound to the destination). */
  openSecret(sealed: string, d: DispatchDestination): string;
  /** Asks management to turn a destination off. */
  disableDestination(scope: ProjectScope, id: string, reason: string): Promise<void>;
  retry: RetryPolicy;
  disableAfterFailingMs: number;
  testTimeoutMs: number;
}

/** The `webhook-id` of an event's delivery to a destination: stable, so a redelivered event maps to the same delivery. */
export function deliveryId(scope: ProjectScope, eventId: string, destinationId: string): string {
  return `msg_${sha256Hex(`${scope.tenantId}\u0000${scope.projectId}\u0000${eventId}\u0000${destinationId}`).slice(0, 32)}`;
}

/**
 * The first attempts of an event: one job per matching destination, worked at once by the caller. The event's
 * message is acknowledged only after they are worked (recorded, or queued for later), so an event is never lost
 * between the stream and the delivery log; a redelivered event gives the same jobs (same `webhook-id`).
 */
export async function eventDeliveryJobs(
  deps: DeliveryDeps,
  env: EventEnvelope<unknown>,
  traceparent?: string,
): Promise<DeliveryJob[]> {
  const routed = routeEvent(env);
  if (!routed) return [];
  const scope = { tenantId: env.tenantId, projectId: env.projectId };
  const targets = (await deps.destinations.forProject(scope)).filter((d) =>
    matches(d, routed.type, routed.agentId, routed.evaluatorId),
  );
  if (!targets.length) return [];
  const body = JSON.stringify(routed.envelope);
  const createdAt = new Date().toISOString();
  return targets.map((d) => ({
    id: deliveryId(scope, env.id, d.id),
    ...scope,
    destinationId: d.id,
    eventId: env.id,
    eventType: routed.type,
    ...(routed.runEventId !== null ? { runEventId: routed.runEventId } : {}),
    body,
    ...(traceparent ? { traceparent } : {}),
    createdAt,
    attempt: 1,
  }));
}

const OUR_HEADERS = new Set([
  'content-type',
  'user-agent',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'host',
  'content-length',
]);

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
export async function sendOnce(
  deps: DeliveryDeps,
  dest: DispatchDestination,
  d: Pick<DeliveryJob, 'id' | 'body' | 'tenantId' | 'projectId'>,
  timeoutMs?: number,
): Promise<SendResult> {
  if (dest.url) {
    let secrets: string[];
    try {
      secrets = signingSecrets(dest, deps.openSecret);
    } catch (err) {
      if (!(err instanceof SealedValueError)) throw err;
      log.error({ destinationId: dest.id, reason: err.reason, err: err.message }, 'signing secret does not open');
      // A key missing from this dispatcher's ENCRYPTION_KEYS can be added, and the attempt retried; a secret that
      // belongs to another destination (or is damaged) will never open here.
      const kind = err.reason === 'unknown_key' || err.reason === 'no_key_opens' ? 'retryable' : 'permanent';
      return { kind, statusCode: null, durationMs: 0, error: `the signing secret could not be opened: ${err.message}` };
    }
    return deps.transports.http({
      url: dest.url,
      headers: requestHeaders(dest.headers, signedHeaders(d.id, d.body, secrets)),
      body: d.body,
      timeoutMs,
    });
  }
  if (dest.chatappChannelId) {
    const envelope = JSON.parse(d.body) as WebhookEnvelope;
    return deps.transports.chat({
      tenantId: d.tenantId,
      projectId: d.projectId,
      channelId: dest.chatappChannelId,
      text: chatText(envelope, dest.name),
      payload: envelope,
    });
  }
  return {
    kind: 'permanent',
    statusCode: null,
    durationMs: 0,
    error: 'the destination has neither url nor chatappChannelId',
  };
}

/** What became of one job. */
export type DeliveryRun =
  | { outcome: 'attempted'; result: SendResult; status: DeliveryStatus; nextAttemptAt: Date | null }
  | { outcome: 'cancelled'; reason: string };

/** The run event id of a job; a job queued before jobs carried it has it only in its body. */
function runEventIdOf(job: Pick<DeliveryJob, 'runEventId' | 'eventType' | 'body'>): string | null {
  if (job.runEventId !== undefined) return job.runEventId;
  if (job.eventType !== 'event.created') return null;
  try {
    const id = (JSON.parse(job.body) as { data?: { event?: { id?: unknown } } }).data?.event?.id;
    return typeof id === 'string' ? id : null;
  } catch {
    return null;
  }
}

const rowOf = (job: DeliveryJob) => ({
  tenantId: job.tenantId,
  projectId: job.projectId,
  destinationId: job.destinationId,
  deliveryId: job.id,
  eventId: job.eventId,
  eventType: job.eventType,
  runEventId: runEventIdOf(job),
  deliveryCreatedAt: new Date(job.createdAt),
  body: job.body,
  ...(job.manual ? { manual: true } : {}),
});

/** The row this attempt follows in the delivery's log (none for a first attempt). */
const previousRow = (job: DeliveryJob) =>
  job.previous ?? (job.attempt > 1 ? attemptRowId(job.id, job.attempt - 1) : undefined);

/**
 * Works one job: checks the destination is still there and enabled, sends, records the attempt and its consequence
 * (delivered, a retry queued for its time, failed), publishes the outcome of a finished delivery, and keeps the
 * destination's health (410 and failing for days turn it off). Everything after the send can be repeated: a job
 * redelivered after a crash sends again with the same `webhook-id` (at least once) and finds its row recorded.
 * `sent` is called as soon as the receiver has answered (or the attempt ended without an answer).
 * A failure to reach management or the database rejects: the job's message is handed back and tried again.
 */
export async function runDelivery(
  deps: DeliveryDeps,
  job: DeliveryJob,
  sent: () => void = () => undefined,
): Promise<DeliveryRun> {
  const scope = { tenantId: job.tenantId, projectId: job.projectId };
  const dest = await deps.destinations.find(scope, job.destinationId);
  if (!dest || !dest.enabled) {
    sent();
    const reason = !dest
      ? 'cancelled: the destination was deleted'
      : `cancelled: the destination is disabled${dest.disabledReason ? ` (${dest.disabledReason})` : ''}`;
    // A manual attempt follows the delivery's last row (maybe a cancel row of attempt - 1): its cancel row is its own.
    const attempted = job.manual ? job.attempt : job.attempt - 1;
    await deps.attempts.record(
      {
        ...rowOf(job),
        kind: 'cancel',
        attempt: attempted,
        at: new Date(),
        statusCode: null,
        ok: false,
        error: reason,
        durationMs: 0,
        status: 'cancelled',
        nextAttemptAt: null,
      },
      previousRow(job),
    );
    log.info({ deliveryId: job.id, destinationId: job.destinationId }, reason);
    return { outcome: 'cancelled', reason };
  }

  const at = new Date();
  const result = await sendOnce(deps, dest, job);
  sent(); // the receiver is done with it; what follows is ours
  const attempt = job.attempt;
  const delay = result.kind === 'retryable' ? nextRetryDelay(deps.retry, attempt, result.retryAfterMs) : null;
  const status: DeliveryStatus = result.kind === 'delivered' ? 'delivered' : delay !== null ? 'pending' : 'failed';
  const nextAttemptAt = delay !== null ? new Date(Date.now() + delay) : null;
  const error =
    result.error && result.kind === 'retryable' && delay === null ? `${result.error}; no attempts left` : result.error;
  const row: AttemptRow = {
    ...rowOf(job),
    kind: 'attempt',
    attempt,
    at,
    statusCode: result.statusCode,
    ok: result.kind === 'delivered',
    error,
    durationMs: result.durationMs,
    status,
    nextAttemptAt,
  };
  await deps.attempts.record(row, previousRow(job));
  if (nextAttemptAt)
    await deps.retries.schedule({
      ...job,
      attempt: attempt + 1,
      dueAt: nextAttemptAt.toISOString(),
      manual: undefined,
      previous: undefined,
    });
  else await deps.publish(outcomeEvents(job, status, row));
  log.info(
    {
      deliveryId: job.id,
      destinationId: job.destinationId,
      eventType: job.eventType,
      attempt,
      statusCode: result.statusCode,
      outcome: result.kind,
      durationMs: result.durationMs,
      nextAttemptAt,
    },
    'delivery attempt',
  );
  await keepHealth(deps, { ...scope, destinationId: dest.id }, result, error);
  return { outcome: 'attempted', result, status, nextAttemptAt };
}

/**
 * `webhook.delivery.succeeded` / `webhook.delivery.failed` once a delivery is finished (nothing while retries are
 * pending). Published after the attempt is recorded and before the job is acknowledged; the event id is derived from
 * the delivery, so a second publish of the same outcome (a redelivered job) is dropped by JetStream.
 */
function outcomeEvents(job: DeliveryJob, status: DeliveryStatus, last: AttemptRow): PendingEvent[] {
  if (status !== 'delivered' && status !== 'failed') return [];
  const def = status === 'delivered' ? webhookDeliverySucceeded : webhookDeliveryFailed;
  const delivery = {
    id: job.id,
    destinationId: job.destinationId,
    eventId: job.eventId,
    eventType: job.eventType,
    attemptCount: last.attempt,
    lastStatusCode: last.statusCode,
    lastError: last.error,
    lastAttempt: {
      attempt: last.attempt,
      at: last.at.toISOString(),
      statusCode: last.statusCode,
      ok: last.ok,
      error: last.error,
      durationMs: last.durationMs,
    },
  };
  const id = sha256Hex(`${def.name}:${job.id}`).slice(0, 40);
  return [
    {
      ...pendingEvent(def, id, { tenantId: job.tenantId, projectId: job.projectId }, { delivery }),
      ...(job.traceparent ? { traceparent: job.traceparent } : {}),
    },
  ];
}

/** Destinations seen succeeding lately, so a busy healthy destination costs no health write per delivery. */
const knownHealthy = new Map<string, number>();
const HEALTHY_MEMORY_MS = 60_000;

async function keepHealth(
  deps: DeliveryDeps,
  key: DestinationKey,
  result: SendResult,
  error: string | null,
): Promise<void> {
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
      await disable(
        deps,
        key,
        `deliveries have failed since ${since.toISOString()} without a success (last: ${error ?? 'unknown error'})`,
      );
    }
  } catch (err) {
    log.warn({ err: (err as Error).message, destinationId: key.destinationId }, 'could not update destination health');
  }
}

/** Records the wish first (it survives a crash), then asks management; the worker retries unconfirmed ones. */
async function disable(deps: DeliveryDeps, key: DestinationKey, reason: string): Promise<void> {
  await deps.health.requestDisable(key, reason);
  log.warn(
    { destinationId: key.destinationId, tenantId: key.tenantId, projectId: key.projectId, reason },
    'disabling webhook destination',
  );
  await confirmDisable(deps, { ...key, reason });
}

export async function confirmDisable(deps: DeliveryDeps, p: DestinationKey & { reason: string }): Promise<void> {
  try {
    await deps.disableDestination(p, p.destinationId, p.reason);
    await deps.health.disableDone(p, p.reason);
    deps.destinations.invalidate(p);
  } catch (err) {
    log.warn(
      { err: (err as Error).message, destinationId: p.destinationId },
      'management did not confirm disabling; will retry',
    );
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
    tenantId: scope.tenantId,
    projectId: scope.projectId,
    agentId: null,
    data: {
      test: { id: testId, destinationId, message: 'A test delivery: if you can read this, the destination works.' },
    },
  };
  const at = new Date();
  const job: DeliveryJob = {
    id: deliveryId(scope, testId, destinationId),
    tenantId: scope.tenantId,
    projectId: scope.projectId,
    destinationId,
    eventId: testId,
    eventType: 'test',
    body: JSON.stringify(envelope),
    createdAt: at.toISOString(),
    attempt: 1,
  };
  const result = await sendOnce(deps, dest, job, deps.testTimeoutMs);
  const ok = result.kind === 'delivered';
  await deps.attempts.record({
    ...rowOf(job),
    kind: 'attempt',
    attempt: 1,
    at,
    statusCode: result.statusCode,
    ok,
    error: result.error,
    durationMs: result.durationMs,
    status: ok ? 'delivered' : 'failed',
    nextAttemptAt: null,
  });
  log.info(
    {
      deliveryId: job.id,
      destinationId,
      statusCode: result.statusCode,
      outcome: result.kind,
      durationMs: result.durationMs,
    },
    'test delivery',
  );
  return {
    success: ok,
    deliveryId: job.id,
    statusCode: result.statusCode,
    error: result.error,
    durationMs: result.durationMs,
  };
}

/** The delivery log of a destination (404 when the destination does not exist in the project). */
export async function listDestinationDeliveries(
  deps: DeliveryDeps,
  scope: ProjectScope,
  destinationId: string,
  q: { page: number; limit: number; status?: string; eventType?: string; runEventId?: string },
) {
  const dest = await deps.destinations.find(scope, destinationId);
  if (!dest) throw new AppError('not_found', 'Webhook destination not found');
  return deps.attempts.list(
    scope,
    destinationId,
    { status: q.status, eventType: q.eventType, runEventId: q.runEventId },
    q.page,
    q.limit,
  );
}
