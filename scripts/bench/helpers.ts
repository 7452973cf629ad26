// Small pieces the rows share: a setup request that must succeed, a pool of jobs, requests one at a time.
import { anAgentNamed } from '@platform/testkit';
import { percentiles, type LoadResult } from './load';

/** A setup request's body, or an error naming what failed when its status is not `status`. */
export async function must<T = any>(p: Promise<{ status: number; body: T }>, status: number, what: string): Promise<T> {
  const r = await p;
  if (r.status !== status) throw new Error(`${what}: expected ${status}, got ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** Makes the agents API keys are bound to (a key is refused for an agent the project does not have). */
export async function agentsIn(
  c: Parameters<typeof anAgentNamed>[0],
  p: { tenantId: string; projectId: string },
  ids: string[] = ['agent-1'],
): Promise<void> {
  for (const id of ids) await anAgentNamed(c, p, id);
}

/** Runs `count` async jobs with `concurrency` at once. */
export async function pool(count: number, concurrency: number, job: (i: number) => Promise<unknown>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, count) }, async () => {
      while (next < count) await job(next++);
    }),
  );
}

/**
 * GET requests one at a time, each allowed two minutes: at least `count` after a first one (not counted), and for at
 * least `minMs`; none started after a minute once three are done.
 * A few milliseconds each, so a fixed count spans a few tens of milliseconds: one burst of background work (the
 * database's statistics after a bulk load) then decided the whole row; measured over seconds, it does not.
 */
export async function sequential(
  url: string,
  headers: Record<string, string>,
  count: number,
  minMs: number,
): Promise<LoadResult> {
  const times: number[] = [];
  let errors = 0;
  const start = Date.now();
  const until = start + 60_000;
  for (let i = 0; i <= count || Date.now() - start < minMs; i++) {
    if (i > 3 && Date.now() >= until) break;
    const t0 = performance.now();
    const res = await fetch(url, { headers, signal: AbortSignal.timeout(120_000) }).catch(() => undefined);
    if (res) await res.arrayBuffer();
    if (i === 0) continue;
    if (!res || res.status !== 200) errors++;
    times.push(performance.now() - t0);
  }
  const p = percentiles(times);
  const mean = times.reduce((a, b) => a + b, 0) / times.length;
  return {
    rps: 1000 / mean,
    p50: Math.round(p.p50 * 10) / 10,
    p99: Math.round((times.length >= 100 ? p.p99 : p.max) * 10) / 10,
    errors,
    unexpected: 0,
    runs: 1,
  };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
