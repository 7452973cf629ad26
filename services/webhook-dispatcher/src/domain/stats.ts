import type { WebhookStats } from '@platform/contracts';
import type { AttemptRepo, DeliveryStatus } from '../data/attempt.repo';
import type { DestinationKey } from '../data/destination-health.repo';

/**
 * Delivery statistics are counters, never a scan of the log. Time is cut into 5-minute slots; per destination and slot:
 * - by status: deliveries created in the slot, by their status now (a change moves one count from the old status to
 *   the new one, so the counts always add up to the deliveries created);
 * - attempts made in the slot, and a histogram of their durations (upper bounds below, the last bucket open-ended).
 */
export const SLOT_MS = 5 * 60_000;
export const DURATION_BOUNDS_MS = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000, 30_000];
const STATUSES: DeliveryStatus[] = ['delivered', 'failed', 'pending', 'cancelled'];

/** One change to a destination's counters: status counts move in the slot of `createdAt`, an attempt counts at `attemptAt`. */
export interface StatsChange {
  key: DestinationKey;
  createdAt: Date;
  from: DeliveryStatus | null;
  to: DeliveryStatus | null;
  attempt?: { at: Date; durationMs: number };
}

/** Where changes go: batched in memory and written every few seconds ($inc upserts, one per destination and hour). */
export interface StatsSink {
  note(change: StatsChange): void;
}

/** A sink that turns changes into slot increments for `add` (the batched counter store). */
export function statsSink(add: (key: DestinationKey, at: Date, inc: Record<string, number>) => void): StatsSink {
  return {
    note(change) {
      for (const { at, inc } of slotIncrements(change)) add(change.key, at, inc);
    },
  };
}

/** The counters of one slot, as stored. */
export interface SlotCounters {
  delivered?: number;
  failed?: number;
  pending?: number;
  cancelled?: number;
  attempts?: number;
  /** Histogram of attempt durations: index into DURATION_BOUNDS_MS (or its length for longer ones) → attempts. */
  h?: Record<string, number>;
}

export function durationBucket(ms: number): number {
  const i = DURATION_BOUNDS_MS.findIndex((b) => ms <= b);
  return i < 0 ? DURATION_BOUNDS_MS.length : i;
}

/** Increments (`field → n`) of one slot for a change; status changes that cancel out give nothing. */
export function slotIncrements(change: StatsChange): Array<{ at: Date; inc: Record<string, number> }> {
  const out: Array<{ at: Date; inc: Record<string, number> }> = [];
  if (change.from !== change.to) {
    const inc: Record<string, number> = {};
    if (change.from) inc[change.from] = -1;
    if (change.to) inc[change.to] = 1;
    out.push({ at: change.createdAt, inc });
  }
  if (change.attempt)
    out.push({ at: change.attempt.at, inc: { attempts: 1, [`h.${durationBucket(change.attempt.durationMs)}`]: 1 } });
  return out;
}

/** The value below which a fraction `q` of the histogram's attempts lie, interpolated inside its bucket. */
export function quantile(hist: number[], q: number): number | null {
  const total = hist.reduce((a, b) => a + b, 0);
  if (!total) return null;
  const target = q * total;
  let seen = 0;
  for (let i = 0; i < hist.length; i++) {
    const n = hist[i] ?? 0;
    if (n && seen + n >= target) {
      const lower = i === 0 ? 0 : DURATION_BOUNDS_MS[i - 1]!;
      const upper = DURATION_BOUNDS_MS[i] ?? lower;
      return Math.round(lower + ((upper - lower) * (target - seen)) / n);
    }
    seen += n;
  }
  return DURATION_BOUNDS_MS[DURATION_BOUNDS_MS.length - 1]!;
}

type Window = WebhookStats['lastHour'];

/** Sums slots (start time → counters) into the hour, day and week before `now`. */
export function summarize(
  destinationId: string,
  slots: Array<{ start: number; counters: SlotCounters }>,
  now = Date.now(),
): WebhookStats {
  const window = (ms: number): Window => {
    const counts = { delivered: 0, failed: 0, pending: 0, cancelled: 0 };
    const hist = new Array<number>(DURATION_BOUNDS_MS.length + 1).fill(0);
    let attempts = 0;
    for (const { start, counters } of slots) {
      if (start + SLOT_MS <= now - ms || start > now) continue;
      for (const s of STATUSES) counts[s] += counters[s] ?? 0;
      attempts += counters.attempts ?? 0;
      for (const [i, n] of Object.entries(counters.h ?? {})) hist[Number(i)] = (hist[Number(i)] ?? 0) + n;
    }
    // A counter can be briefly below zero when a change is counted before the one it follows (two replicas).
    for (const s of STATUSES) counts[s] = Math.max(0, counts[s]);
    const finished = counts.delivered + counts.failed;
    return {
      counts,
      successRate: finished ? Math.round((counts.delivered / finished) * 10_000) / 10_000 : null,
      attempts,
      attemptDurationMs: { p50: quantile(hist, 0.5), p99: quantile(hist, 0.99) },
    };
  };
  return {
    destinationId,
    lastHour: window(3600_000),
    lastDay: window(24 * 3600_000),
    lastWeek: window(7 * 24 * 3600_000),
  };
}

/**
 * The attempt log with counting: every row recorded for the first time moves its delivery's counters (a row that
 * follows another one moves it out of `pending`, the status every later row starts from) and counts its attempt. A row
 * recorded again (a job redelivered after a crash) is a duplicate and counts nothing. No database write is added: the
 * counters are written in batches by the sink.
 */
export function countedAttempts(repo: AttemptRepo, sink: StatsSink): AttemptRepo {
  return {
    ...repo,
    async record(row, previous) {
      const outcome = await repo.record(row, previous);
      if (outcome === 'inserted') {
        sink.note({
          key: { tenantId: row.tenantId, projectId: row.projectId, destinationId: row.destinationId },
          createdAt: row.deliveryCreatedAt,
          from: previous ? 'pending' : null,
          to: row.status,
          ...(row.kind === 'attempt' ? { attempt: { at: row.at, durationMs: row.durationMs } } : {}),
        });
      }
      return outcome;
    },
  };
}
