// Analytics ingest (its own listener, analytics key): one event a request, a batch of 100 sent as 100 requests, and
// the batch endpoint (100 events in one request, stored with one insertMany) against the raw insertMany.
import { randomUUID } from 'node:crypto';
import { randomId } from '@platform/secrets';
import { client } from '@platform/testkit';
import { besideB, cpuPerOperation, proj, projectPath, type BenchContext } from '../context';
import { must, pool } from '../helpers';
import { measure, percentiles, type LoadSpec } from '../load';
import { measurePaired, type Paired } from '../paired';
import { ceilingAtLeast } from '../table';

const analyticsEvent = () =>
  JSON.stringify({
    entityType: 'message',
    messageId: `m-${randomId(8)}`,
    id: randomUUID(),
    type: 'message.viewed',
    properties: { n: 1 },
  });

export async function analyticsRows(ctx: BenchContext) {
  const { table, analyticsUrl } = ctx;
  const load = ctx.settings.load;
  const ak = (
    await must(
      ctx.admin.post(`${projectPath(proj('analytics'))}/analytics-keys`, { integrationId: 'web-1', name: 'bench' }),
      201,
      'analytics key',
    )
  ).data.key as string;
  const headers = { authorization: `Bearer ${ak}` };
  table.add(
    'analytics POST /events (one event, 201)',
    await measure(
      { url: `${analyticsUrl}/events`, method: 'POST', headers, body: analyticsEvent, expectStatus: 201 },
      load,
    ),
  );
  for (const atOnce of [10, 100]) await hundredRequestsRow(ctx, client(analyticsUrl, ak), atOnce);
  // The batch endpoint: 100 events in one request, stored with one insertMany; 4 batches in flight at once. Read
  // against B measured beside it, and the CPU each process spends on an event of a batch (one more run).
  const batchBody = () => JSON.stringify({ events: Array.from({ length: 100 }, () => JSON.parse(analyticsEvent())) });
  const batch: LoadSpec = {
    url: `${analyticsUrl}/events/batch`,
    method: 'POST',
    headers,
    body: batchBody,
    expectStatus: 200,
    connections: 4,
  };
  const batchRow = table.addPaired(
    'analytics POST /events/batch of 100 events (4 connections)',
    perEvent(await measurePaired(batch, [besideB(ctx)], load), 100),
  );
  batchRow.note = `req/s = events/s; p50/p99 = per batch; ${batchRow.note}`;
  table.target(table.againstCeiling(batchRow, 'insertMany of 100'), '>= 0.5 x raw insertMany', ceilingAtLeast(0.5));
  await cpuPerOperation(ctx, 'event of an analytics batch of 100', batch, 100);
}

/** A batch of 100 events sent as 100 requests (the endpoint takes one event a request), `atOnce` at a time: each
 * request is a gateway hop and a bus message, for comparison with the batch endpoint. */
async function hundredRequestsRow(ctx: BenchContext, akClient: ReturnType<typeof client>, atOnce: number) {
  const batchTimes: number[] = [];
  for (let round = 0; round < Math.max(ctx.settings.quick ? 3 : 10, ctx.settings.load.runs * 2); round++) {
    const t0 = performance.now();
    await pool(100, atOnce, async () =>
      must(akClient.post('/events', JSON.parse(analyticsEvent())), 201, 'analytics event'),
    );
    batchTimes.push(performance.now() - t0);
  }
  const batch = percentiles(batchTimes);
  const row = ctx.table.add(
    `analytics ingest of 100 events as 100 requests (${atOnce} at a time)`,
    { rps: 100_000 / batch.p50, p50: Math.round(batch.p50), p99: Math.round(batch.max) },
    undefined,
    'req/s = events/s of the median batch; p50/p99 = median/slowest batch time',
  );
  ctx.table.againstCeiling(row, 'insertMany of 100');
}

/** A paired row of batches of `size` read as events: its rates, and its ratios to what ran beside it, times `size`. */
function perEvent(paired: Paired, size: number): Paired {
  const r = paired.result;
  return {
    ...paired,
    result: { ...r, rps: r.rps * size, runRates: r.runRates?.map((x) => x * size) },
    against: new Map([...paired.against].map(([name, a]) => [name, { ...a, ratio: a.ratio * size }])),
  };
}
