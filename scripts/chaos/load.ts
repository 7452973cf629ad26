// The load of a fault: writes (each retried with its id until acknowledged) from parallel workers, with the fault
// started once a third of them are in, and what every request answered.
import { REQUEST_TIMEOUT_MS, say, sleep, TOTAL, WORKERS, WRITE_DEADLINE_MS } from './run';

/** One POST of the load: its status, or 0 when there was no answer (connection refused, reset or timed out). */
export async function post(url: string, token: string, json: unknown): Promise<number> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(json),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    await res.arrayBuffer().catch(() => undefined);
    return res.status;
  } catch {
    return 0;
  }
}

/** One GET of the load: its status, or 0 when there was no answer. */
export async function get(url: string, token: string): Promise<number> {
  try {
    const res = await fetch(url, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    await res.arrayBuffer().catch(() => undefined);
    return res.status;
  } catch {
    return 0;
  }
}

/**
 * One write of the load and whether it is safe to repeat (`gatewayMayRepeat` of its operation: an event with an id
 * is, a create is not), and optionally a read after it is accepted (always safe to repeat).
 */
export interface Step {
  write: (i: number) => Promise<number>;
  writeSafe: boolean;
  read?: (i: number) => Promise<number>;
}

export interface LoadResult {
  sent: number;
  accepted: Set<number>;
  fivexx: number;
  fivexxSafe: number;
  fivexxNotSafe: number;
  /** Requests with no answer at all (connection refused or reset, or timed out). */
  failed: number;
  /** How many of each failed status (0: no answer). */
  errors: Record<string, number>;
  /** From the fault's end to the first write accepted after it; `load ended first` when every write was answered
   * before the fault was over (nothing left to recover), `never` when writes still failed at the end. */
  recoverMs: number | 'never' | 'load ended first';
  /** When the fault ended (epoch ms). */
  faultEnd: number;
  /** Every status each write got, in order (0: no answer). */
  answers: Map<number, number[]>;
}

/**
 * Sends TOTAL writes with WORKERS in parallel; each write is retried with the same id until acknowledged. `fault`
 * runs once a third of them are acknowledged and calls `end()` when the fault is over (the kill happened, or the
 * stopped part is back); recovery is measured from then to the first acknowledged write sent after the fault began.
 */
export async function load(
  step: Step | ((i: number) => Promise<number>),
  fault: (end: () => void) => Promise<void>,
  signal: AbortSignal,
): Promise<LoadResult> {
  const { write, writeSafe, read } =
    typeof step === 'function' ? { write: step, writeSafe: true, read: undefined } : step;
  let next = 0;
  let sent = 0;
  let fivexx = 0;
  let fivexxSafe = 0;
  let fivexxNotSafe = 0;
  let failed = 0;
  const errors: Record<string, number> = {};
  const count = (status: number, safe: boolean) => {
    sent++;
    if (status === 0 || status >= 500)
      errors[`${status}${safe ? ' safe' : ''}`] = (errors[`${status}${safe ? ' safe' : ''}`] ?? 0) + 1;
    if (status === 0) failed++;
    if (status >= 500) {
      fivexx++;
      if (safe) fivexxSafe++;
      else fivexxNotSafe++;
    }
  };
  const accepted = new Set<number>();
  const answers = new Map<number, number[]>();
  let faultAt = 0;
  let faultEnd = 0;
  let recoveredAt = 0;
  let lastAnswerAt = 0;
  let stop = false;
  const worker = async () => {
    while (next < TOTAL && !stop && !signal.aborted) {
      const i = next++;
      const deadline = Date.now() + WRITE_DEADLINE_MS;
      while (!signal.aborted) {
        const startedAt = Date.now();
        const status = await write(i);
        count(status, writeSafe);
        answers.set(i, [...(answers.get(i) ?? []), status]);
        lastAnswerAt = Date.now();
        if ((status >= 200 && status < 300) || status === 409) {
          accepted.add(i);
          if (faultEnd && !recoveredAt && startedAt >= faultAt) recoveredAt = Date.now();
          if (read) count(await read(i), true);
          break;
        }
        if (Date.now() > deadline) break;
        await sleep(100, signal);
      }
    }
  };
  const chaos = async () => {
    while (accepted.size < TOTAL / 3 && next < TOTAL && !signal.aborted) await sleep(10);
    faultAt = Date.now();
    say(`fault begins (${accepted.size} accepted so far)`);
    try {
      await fault(() => {
        faultEnd = Date.now();
        say(`fault over after ${faultEnd - faultAt} ms`);
      });
    } catch (err) {
      stop = true;
      throw err;
    }
    if (!faultEnd) faultEnd = Date.now();
  };
  const workers = Promise.all(Array.from({ length: WORKERS }, worker));
  try {
    await chaos();
  } finally {
    await workers;
  }
  return {
    sent,
    accepted,
    fivexx,
    fivexxSafe,
    fivexxNotSafe,
    failed,
    errors,
    recoverMs: recoveredAt
      ? Math.max(0, recoveredAt - faultEnd)
      : lastAnswerAt <= faultEnd
        ? 'load ended first'
        : 'never',
    faultEnd,
    answers,
  };
}
