import { ErrorCode, type NatsError } from 'nats';
import { getLogger } from '@platform/logger';
import { counter } from '@platform/telemetry';

const log = getLogger('bus.retry');

/**
 * What became of a request that got no reply:
 * - `not-delivered`: nobody received it (NATS answered "no responders", or the connection was down before sending),
 *   so sending it again is safe for every operation;
 * - `no-answer`: a replica may have received it and died or stalled (a timeout, a connection lost mid-flight), so it
 *   is sent again only when the operation is safe to repeat.
 */
export type Undelivered = 'not-delivered' | 'no-answer';

const OUTCOME = Symbol('bus.undelivered');

/** Marks the error thrown for a failed request with what became of it (read back by `undeliveredOf`). */
export function markUndelivered<E extends object>(err: E, outcome: Undelivered): E {
  Object.defineProperty(err, OUTCOME, { value: outcome, enumerable: false });
  return err;
}

export function undeliveredOf(err: unknown): Undelivered | undefined {
  return typeof err === 'object' && err !== null
    ? ((err as Record<symbol, Undelivered>)[OUTCOME] ?? undefined)
    : undefined;
}

/** Classifies a nats.js request error. */
export function undeliveredFromNats(err: unknown): Undelivered {
  const code = (err as NatsError)?.code;
  return code === ErrorCode.NoResponders || code === '503' ? 'not-delivered' : 'no-answer';
}

export interface RetryPolicy {
  /** The operation is safe to repeat: a request nobody answered in `attemptTimeoutMs` is sent again. */
  repeatable: boolean;
  /** How long one attempt of a repeatable request waits before it is sent again (within the deadline). */
  attemptTimeoutMs: number;
}

/** `bus_request_retries_total{subject, reason}`: requests sent again to another replica. */
const retries = () =>
  counter(
    'bus_request_retries_total',
    'NATS requests sent again because no replica answered (reason: not-delivered or no-answer)',
    ['subject', 'reason'],
  );

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Sends a request until a replica answers or the deadline passes. A request nobody received is always sent again
 * (after a short pause, while a replica starts or NATS comes back); one that may have been received is sent again
 * only when `policy.repeatable`, each attempt then waiting `attemptTimeoutMs` at most, so another replica of the queue
 * group gets it. The last attempt's error is thrown.
 */
export async function withRetries<T>(
  subject: string,
  deadlineMs: number,
  policy: RetryPolicy | undefined,
  attempt: (timeoutMs: number) => Promise<T>,
): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  let pause = 25;
  for (let n = 1; ; n++) {
    const left = deadline - Date.now();
    const timeoutMs = policy?.repeatable ? Math.min(policy.attemptTimeoutMs, left) : left;
    try {
      return await attempt(Math.max(1, timeoutMs));
    } catch (err) {
      const outcome = undeliveredOf(err);
      if (!outcome || !policy) throw err;
      if (outcome === 'no-answer' && !policy.repeatable) throw err;
      const wait = outcome === 'not-delivered' ? pause : 0;
      // Another attempt needs time for a pause and an answer: give up when too little is left.
      if (deadline - Date.now() - wait < 50) throw err;
      retries().inc({ subject, reason: outcome });
      log.debug({ subject, attempt: n, outcome }, 'no replica answered; sending the request again');
      if (wait) await sleep(wait);
      pause = Math.min(pause * 2, 400);
    }
  }
}
