// The load of a fault: writes (each retried with its id until acknowledged) from parallel workers, with the fault
// started once a third of them are in, and what every request answered.
import { REQUEST_TIMEOUT_MS, say, sleep, TOTAL, WORKERS, WRITE_DEADLINE_MS } from './run';

/** One POST of the load: its status, or 0 when there was no answer (connection refused, reset or timed out). */
export async function post(
  url: string,
  token: string,
  json: unknown,
  headers: Record<string, string> = {},
): Promise<number> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
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

/** What the requests of a load answered. */
export interface Tally {
  sent: number;
  fivexx: number;
  fivexxSafe: number;
  fivexxNotSafe: number;
  /** Requests with no answer at all (connection refused or reset, or timed out). */
  failed: number;
  /** How many of each failed status (0: no answer). */
  errors: Record<string, number>;
}

const newTally = (): Tally => ({ sent: 0, fivexx: 0, fivexxSafe: 0, fivexxNotSafe: 0, failed: 0, errors: {} });

/** Counts one answer (0: none) of a request that was safe to repeat or not. */
export function tally(t: Tally, status: number, safe: boolean): void {
  t.sent++;
  const label = `${status}${safe ? ' safe' : ''}`;
  if (status === 0 || status >= 500) t.errors[label] = (t.errors[label] ?? 0) + 1;
  if (status === 0) t.failed++;
  if (status >= 500) {
    t.fivexx++;
    if (safe) t.fivexxSafe++;
    else t.fivexxNotSafe++;
  }
}

export interface LoadResult extends Tally {
  accepted: Set<number>;
  /** From the fault's end to the first write accepted after it; `load ended first` when every write was answered
   * before the fault was over (nothing left to recover), `never` when writes still failed at the end. */
  recoverMs: number | 'never' | 'load ended first';
  /** When the fault began and ended (epoch ms). */
  faultAt: number;
  faultEnd: number;
  /** Every write request: when it was sent (epoch ms) and how long its answer took. */
  timings: Array<[number, number]>;
  /** Every status each write got, in order (0: no answer). */
  answers: Map<number, number[]>;
}

/** How big a load is: writers in parallel (default WORKERS) and writes (default TOTAL, `--total`). */
export interface LoadShape {
  workers?: number;
  total?: number;
}

/**
 * Sends `total` writes with `workers` in parallel; each write is retried with the same id until acknowledged. `fault`
 * runs once a third of them are acknowledged and calls `end()` when the fault is over (the kill happened, or the
 * stopped part is back); recovery is measured from then to the first acknowledged write sent after the fault began.
 */
export async function load(
  step: Step | ((i: number) => Promise<number>),
  fault: (end: () => void) => Promise<void>,
  signal: AbortSignal,
  shape: LoadShape = {},
): Promise<LoadResult> {
  const { workers = WORKERS, total = TOTAL } = shape;
  const { write, writeSafe, read } =
    typeof step === 'function' ? { write: step, writeSafe: true, read: undefined } : step;
  let next = 0;
  const t = newTally();
  const count = (status: number, safe: boolean) => tally(t, status, safe);
  const accepted = new Set<number>();
  const answers = new Map<number, number[]>();
  const timings: Array<[number, number]> = [];
  let faultAt = 0;
  let faultEnd = 0;
  let recoveredAt = 0;
  let lastAnswerAt = 0;
  let stop = false;
  const worker = async () => {
    while (next < total && !stop && !signal.aborted) {
      const i = next++;
      const deadline = Date.now() + WRITE_DEADLINE_MS;
      while (!signal.aborted) {
        const startedAt = Date.now();
        const status = await write(i);
        timings.push([startedAt, Date.now() - startedAt]);
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
    while (accepted.size < total / 3 && next < total && !signal.aborted) await sleep(10);
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
  const running = Promise.all(Array.from({ length: workers }, worker));
  try {
    await chaos();
  } finally {
    await running;
  }
  return {
    ...t,
    accepted,
    recoverMs: recoveredAt
      ? Math.max(0, recoveredAt - faultEnd)
      : lastAnswerAt <= faultEnd
        ? 'load ended first'
        : 'never',
    faultAt,
    faultEnd,
    timings,
    answers,
  };
}

/** The 99th percentile of the answer times of the writes sent in [from, to) (ms), or undefined without any. */
export function p99Between(r: LoadResult, from: number, to: number): number | undefined {
  const ms = r.timings
    .filter(([at]) => at >= from && at < to)
    .map(([, d]) => d)
    .sort((a, b) => a - b);
  return ms.length ? ms[Math.min(ms.length - 1, Math.floor(ms.length * 0.99))] : undefined;
}
