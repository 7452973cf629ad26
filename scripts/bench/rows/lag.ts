// Webhook delivery lag at 100 events/s, measured before the throughput rows (so the dispatcher has no backlog from
// them), with the database write commands of the two write paths read from their /metrics around the run.
import type { BenchContext } from '../context';
import { readDbWrites, writesBetween } from '../db-writes';
import { pooledLag, webhookLag } from '../lag';
import { healthUrlsOf } from '../processes';
import { log } from '../run';
import { settle, settled } from '../stacks';

export async function lagRows(ctx: BenchContext) {
  const { table, stack } = ctx;
  await settled(stack.natsUrl);
  const dispatcherUrls = healthUrlsOf(stack, 'webhook-dispatcher');
  const ingestUrls = healthUrlsOf(stack, 'events-ingest');
  const before = { d: await readDbWrites(dispatcherUrls), i: await readDbWrites(ingestUrls) };
  const lag = await webhookLag(ctx, 'webhooks', 100, ctx.settings.lagSeconds);
  await settle(stack.natsUrl, 30_000);
  const after = { d: await readDbWrites(dispatcherUrls), i: await readDbWrites(ingestUrls) };
  table.add(
    'webhook delivery lag at 100 events/s (request -> receipt)',
    { p50: lag.p50, p99: lag.p99 },
    { text: 'p99 <= 500 ms', ok: (r) => (r.p99 ?? Infinity) <= 500 },
    pooledLag([lag]).text,
  );
  const dw = writesBetween(before.d, after.d);
  const iw = writesBetween(before.i, after.i);
  const perDelivery = dw.total / Math.max(1, lag.all.received);
  const perEvent = iw.total / Math.max(1, lag.all.sent);
  table.push({
    name: `database writes per delivered webhook: ${perDelivery.toFixed(2)}`,
    target: '<= 2',
    met: lag.received > 0 && perDelivery <= 2,
    note: `webhook-dispatcher, ${dw.total} write commands for ${lag.all.received} deliveries (the warm-up's included): ${dw.top}`,
    figure: `${perDelivery.toFixed(2)} writes per delivery`,
  });
  table.push({
    name: `database writes per ingested event: ${perEvent.toFixed(2)}`,
    note: `events-ingest, ${iw.total} write commands for ${lag.all.sent} events (the warm-up's included): ${iw.top}`,
  });
  log(
    `writes per delivered webhook ${perDelivery.toFixed(2)} (${dw.top}); per ingested event ${perEvent.toFixed(2)} (${iw.top})`,
  );
}
