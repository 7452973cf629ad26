// BENCH_SECTIONS=ab (not in the default): whether a setting makes new events faster. The new-event row on two stacks of
// the same services, the second with BENCH_AB_ENV (JSON settings) and BENCH_AB_NODE_ARGS (node flags by service, as
// JSON: `{"gateway":["--max-semi-space-size=16"]}`, after the image's flags, so a flag given again there wins) added,
// BENCH_AB_ROUNDS rounds (5) of one run on each, the order alternating (in-turn.ts).
import { client, freePort } from '@platform/testkit';
import { proj, projectPath, type BenchContext } from '../context';
import { cpuNote, cpuSum, type CpuUse } from '../cpu';
import { agentsIn, must } from '../helpers';
import { inTurn, newEventsOn } from '../in-turn';
import { median } from '../load';
import { log } from '../run';
import type { BenchStack } from '../stacks';

export async function abRows(ctx: BenchContext) {
  const { env: abEnv, nodeArgs: abNodeArgs, rounds } = ctx.settings.ab;
  const started: BenchStack[] = [];
  try {
    started.push(await ctx.startStack('a', await freePort()));
    started.push(await ctx.startStack('b', await freePort(), abNodeArgs, abEnv));
    const sides = started.map((s) => s.stack);
    const keys: string[] = [];
    for (const side of sides) {
      const admin = client(side.gatewayUrl, ctx.secrets.ADMIN_TOKEN);
      await agentsIn(admin, proj('ab'));
      keys.push(
        (
          await must(
            admin.post(`${projectPath(proj('ab'))}/api-keys`, { agentId: 'agent-1', name: 'bench' }),
            201,
            'api key',
          )
        ).data.key as string,
      );
    }
    const rates = sides.map(() => [] as number[]);
    const uses = sides.map(() => [] as CpuUse[]);
    const counts = sides.map(() => 0);
    await inTurn(
      sides.map((side) => side.natsUrl),
      rounds,
      async (k, i) => {
        const { result, use } = await newEventsOn(ctx, sides[k]!, keys[k]!, i, [sides[1 - k]!, ctx.stack]);
        uses[k]!.push(use);
        rates[k]!.push(result.rps);
        counts[k]! += result.completedAll ?? 0;
        log(`A/B round ${i + 1}, ${k === 0 ? 'a' : 'b'}: ${result.rps.toFixed(0)} req/s`);
      },
    );
    const ratios = rates[0]!.map((a, i) => rates[1]![i]! / a);
    const cpu = sides.map((_, k) => cpuNote(cpuSum(uses[k]!), counts[k]!));
    const flags = Object.keys(abNodeArgs).length ? `, node flags ${JSON.stringify(abNodeArgs)}` : '';
    const list = (xs: number[], digits: number) => xs.map((x) => x.toFixed(digits)).join(', ');
    ctx.table.push({
      name: `A/B: events new, b (${JSON.stringify(abEnv)}${flags}) over a (the same services)`,
      rps: median(rates[1]!),
      note: `${median(ratios).toFixed(3)} x a (median round; rounds ${list(ratios, 2)}); rates a ${list(rates[0]!, 0)}; b ${list(rates[1]!, 0)}; CPU per event a ${cpu[0]!.text}; b ${cpu[1]!.text}`,
    });
    log(`A/B: b over a ${median(ratios).toFixed(3)} (rounds ${list(ratios, 2)})`);
  } finally {
    for (const s of started) await s.done();
  }
}
