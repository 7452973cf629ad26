// Two replicas of events-ingest behind the same gateway: new events, read against the one-replica row.
import type { BenchContext } from '../context';
import { sleep } from '../helpers';
import { measure } from '../load';

export async function replicaRows(ctx: BenchContext) {
  const { stack, table } = ctx;
  const second = await stack.startProcess('events-ingest');
  await sleep(3000);
  ctx.memory.sampleIdle(stack);
  const spec = {
    url: `${ctx.gw}/run/v1/events`,
    method: 'POST' as const,
    headers: ctx.events.headers,
    body: ctx.events.newEvent,
    expectStatus: 201,
  };
  const two = table.add('POST /run/v1/events (new), 2 events-ingest replicas', await measure(spec, ctx.settings.load));
  two.note = `${((two.rps ?? 0) / (ctx.carry.evNew?.rps ?? 1)).toFixed(2)} x one replica${two.note ? '; ' + two.note : ''}`;
  await stack.kill(second);
}
