// Webhooks: the highest paced rate at which the delivery lag p99 stays within 1 s (steps up, stops at the first miss).
import type { BenchContext } from '../context';
import { webhookLag } from '../lag';
import { log } from '../run';
import { settled } from '../stacks';

export async function webhookMaxRow(ctx: BenchContext) {
  const steps: string[] = [];
  let best = 0;
  for (const rate of ctx.settings.webhookSteps) {
    await settled(ctx.stack.natsUrl);
    const r = await webhookLag(ctx, `whmax-${rate}`, rate, ctx.settings.lagSeconds);
    const ok = r.received >= r.sent && r.p99 <= 1000 && r.run.rps >= rate * 0.9;
    steps.push(
      `${rate}/s: ${r.run.rps.toFixed(0)} sent/s, p99 ${r.p99} ms, ${r.received} of ${r.sent}${ok ? '' : ' (miss)'} (warm-up second p99 ${r.warmP99.toFixed(1)} ms)`,
    );
    log(`webhook step ${steps[steps.length - 1]}`);
    if (!ok) break;
    best = rate;
  }
  ctx.table.push({
    name: 'webhooks: highest paced rate with lag p99 <= 1 s',
    rps: best,
    target: '>= 300 events/s',
    met: best >= 300,
    note: steps.join('; '),
    figure: `${best} events/s`,
  });
}
