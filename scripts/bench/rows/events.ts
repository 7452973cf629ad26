// The event write path: new events read against B and the raw insertOne measured beside them, where their CPU goes,
// the floor of what a new event is made of, replayed events, and new events paced at half their maximum.
import { withInsertOneRuns } from '../ceiling';
import { besideB, type BenchContext } from '../context';
import { cpuBetween, cpuNote, cpuSnapshot, type CpuUse } from '../cpu';
import { readDbWrites, writesBetween } from '../db-writes';
import { measure, type LoadSpec } from '../load';
import { measurePaired } from '../paired';
import { cpuLabel, dumpMetrics, healthUrlsOf } from '../processes';
import type { Row } from '../results';
import { dbPrefix, log } from '../run';
import { settled } from '../stacks';
import { atLeast } from '../table';

export async function eventRows(ctx: BenchContext) {
  await settled(ctx.stack.natsUrl);
  const evNew = await newEventRow(ctx);
  ctx.carry.evNew = evNew;
  const { cpu, use } = await cpuPerNewEventRow(ctx);
  floorRow(ctx, evNew, cpu.perOpMs, use);
  const { table, gw, events } = ctx;
  const replayed = {
    url: `${gw}/run/v1/events`,
    method: 'POST' as const,
    headers: events.headers,
    body: events.replayBody,
    expectStatus: 200,
  };
  table.addPaired(
    'POST /run/v1/events (replayed, 200)',
    await measurePaired(replayed, [besideB(ctx)], ctx.settings.load),
    atLeast(0.1),
  );
  await halfMaxRow(ctx, evNew);
}

const newEventSpec = (ctx: BenchContext): LoadSpec => ({
  url: `${ctx.gw}/run/v1/events`,
  method: 'POST',
  headers: ctx.events.headers,
  body: ctx.events.newEvent,
  expectStatus: 201,
});

/** New events, read against B and the raw insertOne, both measured again beside it (measurePaired). */
async function newEventRow(ctx: BenchContext): Promise<Row> {
  const { settings } = ctx;
  const withCeiling = settings.sections.has('ceiling');
  const paired = withCeiling
    ? await withInsertOneRuns(ctx.infra.MONGO_URL, dbPrefix, 50, settings.load.warmupS, (insertOne) =>
        measurePaired(
          newEventSpec(ctx),
          [besideB(ctx), { name: 'insertOne x50', run: () => insertOne(settings.load.durationS) }],
          settings.load,
        ),
      )
    : await measurePaired(newEventSpec(ctx), [besideB(ctx)], settings.load);
  const row = ctx.table.addPaired('POST /run/v1/events (new, 201)', paired, {
    text: '>= 1.0 x raw insertOne x50 and >= 0.05 x B',
    ok: (r) => (r.ofCeiling ?? 0) >= 1 && (r.ratio ?? 0) >= 0.05,
  });
  if (!withCeiling) row.note = `${row.note}; no ceiling "insertOne x50" in this run`;
  return row;
}

/** Where the CPU goes while events are written as fast as they come: per process, per event. */
async function cpuPerNewEventRow(ctx: BenchContext) {
  const ingestUrls = healthUrlsOf(ctx.stack, 'events-ingest');
  const writesBefore = await readDbWrites(ingestUrls);
  const before = cpuSnapshot();
  const run = await measure(newEventSpec(ctx), { ...ctx.settings.load, warmupS: 0, runs: 1 });
  const use = cpuBetween(before, cpuSnapshot(), cpuLabel(ctx.stack));
  const ops = run.completed ?? Math.round(run.rps * ctx.settings.load.durationS);
  const cpu = cpuNote(use, ops);
  // Rows per insert command: how well the group commit batches at this rate (each batch also has its marker row).
  const w = writesBetween(writesBefore, await readDbWrites(ingestUrls));
  const batch = `database writes per event ${(w.total / Math.max(1, ops)).toFixed(2)} (${w.top})`;
  const insertOne = ctx.carry.cpuInsertOne ? `; raw insertOne: ${ctx.carry.cpuInsertOne}` : '';
  ctx.table.push({
    name: `CPU per new event: ${cpu.perOpMs.toFixed(2)} ms (all processes)`,
    rps: cpu.cpuBoundRate,
    note: `${run.rps.toFixed(0)} req/s in this run; ${batch}; ${cpu.text}${insertOne}`,
  });
  log(`CPU per new event: ${cpu.text}; ${batch}`);
  return { cpu, use };
}

/**
 * The floor: the CPU of the parts every new event is made of, each measured alone in this run. A design that keeps the
 * gateway hop, a database row and a stream message per event cannot cost less; both cores at this cost bound the rate
 * any such design can reach on this machine.
 */
function floorRow(ctx: BenchContext, evNew: Row, perEventMs: number, use: CpuUse) {
  const parts = ctx.carry.floorParts;
  const [echo, row, pub] = [parts.get('echo'), parts.get('row'), parts.get('publish')];
  if (echo === undefined || row === undefined || pub === undefined) return;
  const floorMs = echo + row + pub;
  const floorRate = (use.cores * 1000) / floorMs;
  const over = `a new event costs ${(perEventMs / floorMs).toFixed(2)} x the floor (${(perEventMs - floorMs).toFixed(2)} ms more)`;
  const note = `echo hop ${echo.toFixed(2)} + a row of an insertMany of 100 ${row.toFixed(2)} + a JetStream publish ${pub.toFixed(2)} ms; ${use.cores} cores at this cost; ${over}`;
  ctx.table.againstCeiling(
    ctx.table.add(`floor of a new event: ${floorMs.toFixed(2)} CPU ms`, { rps: floorRate }, undefined, note),
    'insertOne x50',
  );
  evNew.note = `${evNew.note ? evNew.note + '; ' : ''}${((evNew.rps ?? 0) / floorRate).toFixed(2)} x the floor`;
  log(
    `floor of a new event: ${floorMs.toFixed(2)} CPU ms (echo ${echo.toFixed(2)}, row ${row.toFixed(2)}, publish ${pub.toFixed(2)}): ${floorRate.toFixed(0)}/s; ${over}`,
  );
}

/** New events paced at half the closed loop's rate, for their p99, with what that load costs the machine. */
async function halfMaxRow(ctx: BenchContext, evNew: Row) {
  const { settings, stack } = ctx;
  const half = Math.max(1, Math.round((evNew.rps ?? 2) / 2));
  if (settings.dumpMetrics) await dumpMetrics(stack, 'before-half');
  const halfBefore = cpuSnapshot();
  const spec: LoadSpec = {
    url: `${ctx.gw}/run/v1/events`,
    method: 'POST',
    headers: ctx.events.headers,
    template: ctx.events.withId('{{id}}'),
    rate: half,
    expectStatus: 201,
  };
  const halfRun = await measure(spec, { ...settings.load, warmupS: 1 });
  // What the paced load costs the machine (the pacer's thread is the load generator's): at half the closed loop's
  // rate, requests come one at a time and each hop handles them alone, so the machine is far more than half busy.
  const halfUse = cpuBetween(halfBefore, cpuSnapshot(), cpuLabel(stack));
  const halfSent =
    (halfRun.completedAll ?? 0) + halfRun.errors + halfRun.unexpected + Math.floor(half * 1) * halfRun.runs;
  const halfCpu = cpuNote(halfUse, halfSent);
  const halfNote = `p50 and p99 of every request of the ${halfRun.runs} runs; in one of them the ${halfRun.loader}; CPU per event at this rate (warm-up seconds included): ${halfCpu.text}`;
  ctx.table.add(
    `POST /run/v1/events at half its maximum (${half}/s)`,
    halfRun,
    { text: 'p99 <= 50 ms', ok: (r) => (r.p99 ?? Infinity) <= 50 },
    halfNote,
  );
  if (settings.dumpMetrics) await dumpMetrics(stack, 'after-half');
}
