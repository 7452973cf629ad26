// Writes as the event and delivery collections grow: the event write rate and the webhook lag on two stacks of the
// same services, each with its own NATS and database, one of them holding BENCH_WRITE_GROWTH events and as many
// finished deliveries stored beforehand, measured in turn (a run on one, the same run on the other, in rounds): both
// sides share every minute of the machine (in-turn.ts). Two new stacks, not the one of the other rows: its tables
// already hold the events of every row before.
import { client, freePort, type PrivateStack } from '@platform/testkit';
import { proj, projectPath, type BenchContext } from '../context';
import { cpuNote, cpuSum, type CpuUse } from '../cpu';
import { agentsIn, must, sleep } from '../helpers';
import { inTurn, newEventsOn } from '../in-turn';
import { pooledLag, webhookLag, type LagRun } from '../lag';
import { median, type LoadResult } from '../load';
import { medianRun } from '../paired';
import { dbPrefixOf, partitionOf } from '../run';
import { countStored, DELIVERY_COLLECTION, seedWriteHistory } from '../seed';
import type { BenchStack } from '../stacks';

/** The stacks the write-growth rows start besides the main one. */
const GROWTH_STACKS = ['empty', 'grown'] as const;

interface Side {
  name: string;
  stack: PrivateStack;
  gw: string;
  admin: ReturnType<typeof client>;
  natsUrl: string;
  prefix: string;
  key: string;
}

/** What each side measured: its rate runs with their CPU, its lag runs. */
interface Measured {
  runs: LoadResult[][];
  uses: CpuUse[][];
  lagRuns: LagRun[][];
  seedS: number;
}

export async function writeGrowthRows(ctx: BenchContext) {
  const started: BenchStack[] = [];
  try {
    for (const name of GROWTH_STACKS) started.push(await ctx.startStack(name, await freePort()));
    const sides = await growthSides(ctx, started);
    const seedS = await seedHistory(ctx, sides[1]!);
    const m = { ...(await measureInTurn(ctx, sides)), seedS };
    await growthTableRows(ctx, sides, m);
  } finally {
    for (const s of started) await s.done();
  }
}

async function growthSides(ctx: BenchContext, started: BenchStack[]): Promise<Side[]> {
  const wP = proj('wgrowth');
  const sides: Side[] = [];
  for (const [k, name] of GROWTH_STACKS.entries()) {
    const stack = started[k]!.stack;
    const admin = client(stack.gatewayUrl, ctx.secrets.ADMIN_TOKEN);
    sides.push({ name, stack, gw: stack.gatewayUrl, admin, natsUrl: stack.natsUrl, prefix: dbPrefixOf(name), key: '' });
  }
  for (const side of sides) await agentsIn(side.admin, wP);
  for (const side of sides)
    side.key = (
      await must(side.admin.post(`${projectPath(wP)}/api-keys`, { agentId: 'agent-1', name: 'bench' }), 201, 'api key')
    ).data.key as string;
  return sides;
}

/** Stores the history in the grown side's database; answers how long that took. */
async function seedHistory(ctx: BenchContext, grown: Side): Promise<number> {
  const s0 = Date.now();
  await seedWriteHistory(
    ctx.infra.MONGO_URL,
    grown.prefix,
    { ...proj('history'), partition: partitionOf('grown'), destinationId: 'dst-history' },
    ctx.settings.writeGrowthSize,
  );
  const seedS = (Date.now() - s0) / 1000;
  await sleep(ctx.settings.quick ? 6_000 : 12_000); // the database's statistics of the new rows
  return seedS;
}

/**
 * The rate: rounds of one run on each stack (the first of each after its warm-up), with the CPU of each run per event:
 * whether a slower rate is the stack doing more per event, or the machine giving it less. Then the webhook lag: rounds
 * of one paced run on each stack.
 */
async function measureInTurn(ctx: BenchContext, sides: Side[]): Promise<Omit<Measured, 'seedS'>> {
  const runs = sides.map(() => [] as LoadResult[]);
  const uses = sides.map(() => [] as CpuUse[]);
  const natsUrls = sides.map((side) => side.natsUrl);
  await inTurn(natsUrls, ctx.settings.growthRateRounds, async (k, i) => {
    const { result, use } = await newEventsOn(ctx, sides[k]!.stack, sides[k]!.key, i, [sides[1 - k]!.stack, ctx.stack]);
    runs[k]!.push(result);
    uses[k]!.push(use);
  });
  const lagRuns = sides.map(() => [] as LagRun[]);
  await inTurn(natsUrls, ctx.settings.growthLagRuns, async (k, i) => {
    lagRuns[k]!.push(
      await webhookLag(ctx, `wgrowth-${sides[k]!.name}-${i + 1}`, 100, ctx.settings.growthLagSeconds, sides[k]!),
    );
  });
  return { runs, uses, lagRuns };
}

/** The median of the rounds' ratios, grown over empty: each ratio is of two runs that share their minute. */
function roundRatios(empty: number[], grown: number[]) {
  const ratios = empty.map((x, i) => grown[i]! / x);
  return { ratios, median: median(ratios) };
}

async function growthTableRows(ctx: BenchContext, sides: Side[], m: Measured) {
  const { table } = ctx;
  const size = ctx.settings.writeGrowthSize;
  const [empty, full] = await Promise.all(
    sides.map(async (side, k) => {
      const rate = medianRun(m.runs[k]!);
      const events = await countStored(ctx.infra.MONGO_URL, side.prefix, 'events-ingest', 'runEvents');
      const deliveries = await countStored(ctx.infra.MONGO_URL, side.prefix, 'webhook-dispatcher', DELIVERY_COLLECTION);
      return {
        rate,
        cpu: cpuNote(cpuSum(m.uses[k]!), rate.completedAll ?? 0),
        lag: pooledLag(m.lagRuns[k]!),
        stored: `${events} events, ${deliveries} deliveries stored`,
      };
    }),
  );
  const rounds = `rates in turn (empty / grown) ${m.runs[0]!.map((r, i) => `${r.rps.toFixed(0)} / ${m.runs[1]![i]!.rps.toFixed(0)}`).join(', ')}`;
  const cpuOfEvent = (c: ReturnType<typeof cpuNote>) => `CPU per event ${c.text}`;
  table.add(
    'events new, empty database (in turn with the row below)',
    empty!.rate,
    undefined,
    `${empty!.stored}; ${cpuOfEvent(empty!.cpu)}`,
  );
  table.add(
    'webhook lag at 100/s, empty database (in turn with the row below)',
    { p50: empty!.lag.p50, p99: empty!.lag.p99 },
    undefined,
    empty!.lag.text,
  );
  const growth = roundRatios(
    m.runs[0]!.map((r) => r.rps),
    m.runs[1]!.map((r) => r.rps),
  ).median;
  const cpuRatio = (full!.cpu.perOpMs / empty!.cpu.perOpMs).toFixed(2);
  const rateNote = `${full!.stored}; seeded in ${m.seedS.toFixed(1)} s; ${rounds}; ${growth.toFixed(2)} x the empty database (median round); ${cpuOfEvent(full!.cpu)}, ${cpuRatio} x the empty database's`;
  const rateRow = table.add(`events new with ${size} events and deliveries stored`, full!.rate, undefined, rateNote);
  table.target(
    rateRow,
    '>= 0.9 x the empty database (in turn)',
    () => growth >= 0.9,
    `${growth.toFixed(2)} × the empty database's rate (median round)`,
  );
  // Each side's p99 is of every delivery of its runs (settings.growthLagSeconds); the rounds' ratios are listed.
  const lagGrowth = full!.lag.p99 / empty!.lag.p99;
  const lagRounds = roundRatios(
    m.lagRuns[0]!.map((l) => l.p99),
    m.lagRuns[1]!.map((l) => l.p99),
  );
  const lagNote = `${full!.lag.text}; p99 ${lagGrowth.toFixed(2)} x the empty database's, p50 ${(full!.lag.p50 / empty!.lag.p50).toFixed(2)} x (rounds' p99 ratios ${lagRounds.ratios.map((x) => x.toFixed(2)).join(', ')}, median ${lagRounds.median.toFixed(2)})`;
  const lagRow = table.add(
    `webhook lag at 100/s with ${size} stored`,
    { p50: full!.lag.p50, p99: full!.lag.p99 },
    undefined,
    lagNote,
  );
  table.target(
    lagRow,
    'p99 <= 1.1 x the empty database (in turn)',
    () => lagGrowth <= 1.1 && full!.lag.received >= full!.lag.sent,
    `p99 ${lagGrowth.toFixed(2)} × the empty database's`,
  );
}
