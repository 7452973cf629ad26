import type { ProjectScope, WebhookDelivery, WebhookStats } from '@platform/contracts';
import { getLogger } from '@platform/logger';
import { AppError } from '@platform/problems';
import { latestRow, type StoredAttempt } from '../data/attempt.repo';
import type { DestinationKey } from '../data/destination-health.repo';
import type { DeliveryDeps } from './deliveries';
import type { DeliveryJob } from './jobs';
import { summarize, type StatsSink } from './stats';

const log = getLogger('webhook-dispatcher.manual');
const WEEK_MS = 7 * 24 * 3600_000;
/** A pending delivery this far past its due time has lost its job: it may be redelivered. */
const STALE_PENDING_MS = 15 * 60_000;

export interface ManualDeliveryDeps extends DeliveryDeps {
  stats: StatsSink;
  /** The destination's counter slots of the last `ms`. */
  statsSlots(key: DestinationKey, ms: number): Promise<Array<{ start: number; counters: Record<string, any> }>>;
  /** How far back the delivery log keeps deliveries (WEBHOOK_LOG_RETENTION_DAYS): recover reaches no further. */
  logRetentionMs: number;
  /** Deliveries one recover call queues at most. */
  recoverMaxPerCall: number;
}

async function enabledDestination(deps: DeliveryDeps, scope: ProjectScope, destinationId: string) {
  const dest = await deps.destinations.find(scope, destinationId);
  if (!dest) throw new AppError('not_found', 'Webhook destination not found');
  return dest;
}

const disabled = () =>
  new AppError('conflict', 'The destination is disabled: enable it first, then send deliveries again');

/**
 * Queues one more attempt of a delivery, marked manual, with its `webhook-id` (the body is the one stored on its row;
 * it is signed afresh when sent). The delivery's latest row is marked `pending` first, only if it still has the status
 * it was read with (of two calls racing, one marks it and the other is told it is pending), then the job goes out under
 * a message id made of the delivery and the attempt (JetStream drops a second publish of it). A publish that fails
 * takes the mark back. Answers whether this call queued it.
 */
async function queueManualAttempt(deps: ManualDeliveryDeps, latest: StoredAttempt): Promise<boolean> {
  const scope = { tenantId: latest.tenantId, projectId: latest.projectId };
  const job: DeliveryJob = {
    id: latest.deliveryId,
    ...scope,
    destinationId: latest.destinationId,
    eventId: latest.eventId,
    eventType: latest.eventType,
    ...(latest.runEventId ? { runEventId: latest.runEventId } : {}),
    body: latest.body,
    createdAt: new Date(latest.deliveryCreatedAt).toISOString(),
    // The latest row has the highest attempt of the delivery (a cancel row counts the attempts made before it).
    attempt: latest.attempt + 1,
    manual: true,
    previous: latest._id,
  };
  const moved = {
    key: { ...scope, destinationId: latest.destinationId },
    createdAt: new Date(latest.deliveryCreatedAt),
    from: latest.status,
    to: 'pending' as const,
  };
  // Marked before the job exists: no attempt can be recorded on the row while it is being marked (FerretDB v1 writes a
  // whole document per update, so two updates of one row at once could lose one).
  if (!(await deps.attempts.markQueued(latest))) return false;
  try {
    await deps.retries.schedule(job, 'manual');
  } catch (err) {
    await deps.attempts.unmarkQueued(latest).catch(() => undefined);
    throw err;
  }
  deps.stats.note(moved);
  log.info(
    { deliveryId: latest.deliveryId, destinationId: latest.destinationId, attempt: job.attempt },
    'manual attempt queued',
  );
  return true;
}

/** `POST …/deliveries/{deliveryId}/redeliver`. */
export async function redeliver(
  deps: ManualDeliveryDeps,
  scope: ProjectScope,
  destinationId: string,
  deliveryId: string,
): Promise<WebhookDelivery> {
  const dest = await enabledDestination(deps, scope, destinationId);
  const latest = latestRow(await deps.attempts.rowsOf(scope, destinationId, deliveryId));
  if (!latest) throw new AppError('not_found', 'Webhook delivery not found');
  const pending = () => new AppError('conflict', 'The delivery is pending: an attempt is already scheduled');
  // A pending delivery waits for its attempt; one overdue by far lost its job (a crash between mark and publish).
  const stale =
    latest.status === 'pending' &&
    latest.nextAttemptAt &&
    Date.now() - new Date(latest.nextAttemptAt).getTime() > STALE_PENDING_MS;
  if (latest.status === 'pending' && !stale) throw pending();
  if (!dest.enabled) throw disabled();
  if (!(await queueManualAttempt(deps, latest))) throw pending();
  return deps.attempts.toDelivery(await deps.attempts.rowsOf(scope, destinationId, deliveryId))!;
}

/** `POST …/recover`: every failed or cancelled delivery created in [since, until), each queued once. */
export async function recoverDeliveries(
  deps: ManualDeliveryDeps,
  scope: ProjectScope,
  destinationId: string,
  window: { since: string; until?: string },
): Promise<{ scheduled: number; more: boolean }> {
  const dest = await enabledDestination(deps, scope, destinationId);
  const now = Date.now();
  const since = new Date(window.since);
  const until = window.until ? new Date(window.until) : new Date(now);
  const oldest = now - deps.logRetentionMs;
  if (since.getTime() < oldest) {
    const days = Math.round((deps.logRetentionMs / 86_400_000) * 100) / 100;
    throw new AppError(
      'unprocessable_entity',
      `since is further back than the delivery log keeps deliveries (${days} days): nothing created before ${new Date(oldest).toISOString()} can be recovered; choose a later since`,
      { errors: [{ pointer: '/since', detail: `must not be before ${new Date(oldest).toISOString()}` }] },
    );
  }
  if (!dest.enabled) throw disabled();
  let scheduled = 0;
  let more = false;
  for (const status of ['failed', 'cancelled'] as const) {
    const room = deps.recoverMaxPerCall - scheduled;
    const rows = await deps.attempts.latestWithStatus(scope, destinationId, status, since, until, room + 1);
    if (rows.length > room) more = true;
    const batch = rows.slice(0, room);
    // A few at a time: each is one publish and one update by _id.
    for (let i = 0; i < batch.length; i += 16) {
      const done = await Promise.all(batch.slice(i, i + 16).map((row) => queueManualAttempt(deps, row)));
      scheduled += done.filter(Boolean).length;
    }
    if (more) break;
  }
  log.info(
    { destinationId, since: since.toISOString(), until: until.toISOString(), scheduled, more },
    'deliveries recovered',
  );
  return { scheduled, more };
}

/** `GET …/stats`: from the destination's counters, never from the log. */
export async function destinationStats(
  deps: ManualDeliveryDeps,
  scope: ProjectScope,
  destinationId: string,
): Promise<WebhookStats> {
  await enabledDestination(deps, scope, destinationId);
  return summarize(destinationId, await deps.statsSlots({ ...scope, destinationId }, WEEK_MS));
}
