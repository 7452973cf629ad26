// The gateway alone and the gateway's hop to a service and back: each measured in turn with B beside it. One more
// echo run gives the echo hop's CPU, a part of the floor row.
import { besideB, cpuPart, type BenchContext } from '../context';
import { measure } from '../load';
import { measurePaired } from '../paired';
import { cpuLabel } from '../processes';
import { atLeast } from '../table';

export async function coreRows(ctx: BenchContext) {
  const { table, gw } = ctx;
  const load = ctx.settings.load;
  table.addPaired(
    'gateway GET /healthz (no NATS)',
    await measurePaired({ url: `${gw}/healthz` }, [besideB(ctx)], load),
    atLeast(0.35),
  );
  table.addPaired(
    'gateway -> NATS -> echo (GET /ping)',
    await measurePaired({ url: `${gw}/ping` }, [besideB(ctx)], load),
    atLeast(0.1),
  );
  await cpuPart(
    ctx,
    'echo',
    'echo (gateway -> NATS -> management)',
    cpuLabel(ctx.stack),
  )(async () => {
    const run = await measure({ url: `${gw}/ping` }, { ...load, warmupS: 0, runs: 1 });
    return run.completed ?? Math.round(run.rps * load.durationS);
  });
}
