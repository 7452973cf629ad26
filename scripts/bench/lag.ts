// Webhook delivery lag: events paced into a project whose one destination is a local receiver, each event's lag from
// the moment its request was sent to the delivery's arrival.
import http from 'node:http';
import type { client } from '@platform/testkit';
import { proj, projectPath, type BenchContext } from './context';
import { agentsIn, must } from './helpers';
import { measure, percentiles } from './load';

/** Seconds each webhook lag run paces before the events it counts. */
export const LAG_WARMUP_S = 1;

/**
 * A local webhook receiver that records each event's lag: from the moment the load generator sent the event's request
 * (`sent`, filled by the paced run with each id's send time) to the delivery's arrival, both wall-clock times in
 * milliseconds (performance.timeOrigin + now, shared by the pacer's thread), to the tenth of a millisecond (the event's
 * own `createdAt` has whole milliseconds, coarse against lags of a few).
 */
async function startLagReceiver() {
  const sent = new Map<string, number>();
  /** The send times of the warm-up's events (delivered like the others, not counted). */
  const warm = new Map<string, number>();
  /** The first arrival of each event id. */
  const arrivals = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.timeOrigin + performance.now();
      try {
        const j = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data?: { event?: { id?: string } } };
        const id = j.data?.event?.id;
        if (id && !arrivals.has(id)) arrivals.set(id, at);
      } catch {
        /* not ours */
      }
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  /** The lag of every sent event that arrived (ms). */
  const lagsOf = (of: Map<string, number>) =>
    [...of].flatMap(([id, from]) => (arrivals.has(id) ? [Math.round((arrivals.get(id)! - from) * 10) / 10] : []));
  const lags = () => lagsOf(sent);
  const warmLags = () => lagsOf(warm);
  const received = () => [...sent.keys()].filter((id) => arrivals.has(id)).length;
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`,
    sent,
    warm,
    lags,
    warmLags,
    received,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

export type LagRun = Awaited<ReturnType<typeof webhookLag>>;

/**
 * Events paced at `rate`/s for `seconds` into a project with one webhook destination (a local receiver), on the main
 * stack or `on` another one; the lag is from the event's request to the delivery's receipt (startLagReceiver).
 */
export async function webhookLag(
  ctx: BenchContext,
  name: string,
  rate: number,
  seconds: number,
  on: { gw: string; admin: ReturnType<typeof client> } = ctx,
) {
  const receiver = await startLagReceiver();
  try {
    const wP = proj(name);
    await agentsIn(on.admin, wP);
    const wKey = (
      await must(on.admin.post(`${projectPath(wP)}/api-keys`, { agentId: 'agent-1', name: 'bench' }), 201, 'api key')
    ).data.key as string;
    await must(
      on.admin.post(`${projectPath(wP)}/webhook-destinations`, {
        name: 'bench',
        url: receiver.url,
        eventTypes: ['event.created'],
      }),
      201,
      'webhook destination',
    );
    const run = await measure(
      {
        url: `${on.gw}/run/v1/events`,
        method: 'POST',
        headers: { authorization: `Bearer ${wKey}` },
        template: ctx.events.withId('{{id}}'),
        sentAt: receiver.sent,
        warmSentAt: receiver.warm,
        rate,
        connections: Math.max(10, Math.ceil(rate / 20)),
        expectStatus: 201,
      },
      // A second paced first and not counted, as in the half-max row: the pacer's thread is new and cold, and so are
      // the project's first events (its key verified, its destinations read). Counted, that second can be the p99 of
      // a 30 s run on its own.
      { ...ctx.settings.load, warmupS: LAG_WARMUP_S, runs: 1, durationS: seconds },
    );
    const sent = run.completed ?? Math.round(run.rps * seconds);
    const deadline = Date.now() + 60_000;
    while (receiver.received() < sent && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    const lag = percentiles(receiver.lags());
    const warmed = percentiles(receiver.warmLags());
    const failed = Object.entries(run.errorKinds ?? {})
      .map(([kind, n]) => `${n} ${kind}`)
      .join(', ');
    const warmup = `${receiver.warm.size} events, lag p50 ${warmed.p50.toFixed(1)} ms, p99 ${warmed.p99.toFixed(1)} ms`;
    // Everything the run made the stack do, the warm-up's events included (the write counts are of both).
    const all = { sent: sent + receiver.warm.size, received: receiver.received() + receiver.warmLags().length };
    return {
      run,
      sent,
      received: receiver.received(),
      p50: lag.p50,
      p99: lag.p99,
      lags: receiver.lags(),
      warmup,
      warmP99: warmed.p99,
      failed,
      all,
    };
  } finally {
    await receiver.close();
  }
}

/**
 * Several lag runs of one side of a growth row as one: the percentiles of every delivery of the runs together, every
 * delivery counted, and each run's p99 listed.
 */
export function pooledLag(
  lags: Array<{
    sent: number;
    received: number;
    p50: number;
    p99: number;
    lags: number[];
    warmup: string;
    failed: string;
  }>,
) {
  const sent = lags.reduce((n, l) => n + l.sent, 0);
  const received = lags.reduce((n, l) => n + l.received, 0);
  const p99s = lags.map((l) => l.p99);
  const warmups = `${lags.length === 1 ? 'its' : "each run's"} first ${LAG_WARMUP_S} s, paced and not counted: ${lags.map((l) => l.warmup).join('; ')}`;
  const failed = lags.flatMap((l) => (l.failed ? [l.failed] : []));
  const runs =
    lags.length === 1 ? 'one run' : `every delivery of ${lags.length} runs (their p99s ${p99s.join(', ')} ms)`;
  const text = `${received} of ${sent} received; ${runs}; ${warmups}${failed.length ? `; requests not answered 201: ${failed.join('; ')}` : ''}`;
  const all = lags.length === 1 ? lags[0]! : percentiles(lags.flatMap((l) => l.lags));
  return { sent, received, p50: all.p50, p99: all.p99, text };
}
