/** What one attempt's result means for the delivery. */
export type OutcomeKind =
  /** 2xx, or the chat app posted the message. */
  | 'delivered'
  /** Network error, timeout, 408, 429, 5xx, chat app unavailable: try again per schedule. */
  | 'retryable'
  /** 410 Gone: stop, and disable the destination. */
  | 'gone'
  /** Any other answer (3xx redirects are not followed, 4xx): stop. */
  | 'permanent'
  /** The address is not one we deliver to: stop without connecting. */
  | 'refused';

export interface RetryPolicy {
  /** Delay before retry n (index 0 = after the first attempt). */
  scheduleMs: number[];
  /** ± fraction of random spread on each delay. */
  jitter: number;
}

export function maxAttempts(policy: RetryPolicy): number {
  return policy.scheduleMs.length + 1;
}

/**
 * When to try again after `attemptsMade` attempts, or null when the schedule is used up. A receiver's
 * `Retry-After` can push the retry later (never beyond the longest step of the schedule).
 */
export function nextRetryDelay(
  policy: RetryPolicy,
  attemptsMade: number,
  retryAfterMs?: number,
  random: () => number = Math.random,
): number | null {
  const base = policy.scheduleMs[attemptsMade - 1];
  if (base === undefined) return null;
  const spread = base * policy.jitter * (2 * random() - 1);
  const delay = Math.max(0, Math.round(base + spread));
  if (retryAfterMs === undefined) return delay;
  return Math.max(delay, Math.min(retryAfterMs, Math.max(...policy.scheduleMs)));
}

/** How an HTTP status is treated. */
export function classifyStatus(status: number): OutcomeKind {
  if (status >= 200 && status < 300) return 'delivered';
  if (status === 410) return 'gone';
  if (status === 408 || status === 429 || status >= 500) return 'retryable';
  return 'permanent';
}

/** `Retry-After` as delay-seconds or an HTTP date, in ms; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
