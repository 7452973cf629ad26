// Two stacks measured in turn (the A/B and write-growth rows): both sides share every minute of the machine, whose
// speed moves by a fifth within a run, so a ratio of the two is read where single runs of each, minutes apart, are not.
import type { Stack } from '@platform/testkit';
import { cpuBetween, cpuSnapshot } from './cpu';
import type { BenchContext } from './context';
import { measure, type LoadSpec } from './load';
import { cpuLabel } from './processes';
import { settled } from './stacks';

/**
 * `rounds` rounds of one run on each of two stacks (given by their NATS URLs), each after its stack's consumers have
 * settled. Each round's first run follows the other stack's run (or the rows before): the order alternates from
 * round to round (0 then 1, 1 then 0, ...), so whatever one run leaves behind falls on each side alike.
 */
export async function inTurn(natsUrls: string[], rounds: number, run: (k: number, round: number) => Promise<void>) {
  for (let i = 0; i < rounds; i++) {
    for (const k of i % 2 === 0 ? [0, 1] : [1, 0]) {
      await settled(natsUrls[k]!);
      await run(k, i);
    }
  }
}

/** One run of new events on `on` (after its warm-up in the first round) and its CPU per process (`others` named so). */
export async function newEventsOn(ctx: BenchContext, on: Stack, key: string, round: number, others: Stack[]) {
  let cpuStart = cpuSnapshot();
  const spec: LoadSpec = {
    url: `${on.gatewayUrl}/run/v1/events`,
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: ctx.events.newEvent,
    expectStatus: 201,
  };
  const load = ctx.settings.load;
  const result = await measure(
    spec,
    { ...load, runs: 1, warmupS: round === 0 ? load.warmupS : 0 },
    { start: () => (cpuStart = cpuSnapshot()) },
  );
  return { result, use: cpuBetween(cpuStart, cpuSnapshot(), cpuLabel(on, others)) };
}
