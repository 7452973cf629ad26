// BENCH_PROFILE: only the profiled path, with --cpu-prof on its services (their top frames are printed at the end).
// `list`: the API key list at 10 connections; `events` (or 1): new events, closed loop or paced at BENCH_PROFILE_RATE,
// and replayed ones.
import { proj, projectPath, type BenchContext } from '../context';
import { agentsIn, must } from '../helpers';
import { measure } from '../load';

export async function profileRows(ctx: BenchContext) {
  const { table, stack, gw, admin, adminH, events, settings } = ctx;
  if (settings.profile === 'list') {
    const lP = proj('profile-list');
    await agentsIn(admin, lP);
    for (let i = 0; i < 21; i++)
      await must(admin.post(`${projectPath(lP)}/api-keys`, { agentId: 'agent-1', name: `k${i}` }), 201, 'api key');
    await ctx.memory.underLoad(stack, async () => {
      table.add(
        'management list API keys (10 a page of 21), 10 connections',
        await measure(
          { url: `${gw}${projectPath(lP)}/api-keys?limit=10`, headers: adminH, connections: 10 },
          settings.load,
        ),
      );
    });
    return;
  }
  await ctx.memory.underLoad(stack, async () => {
    const rate = settings.profileRate;
    const spec = rate > 0 ? { template: events.withId('{{id}}'), rate } : { body: events.newEvent };
    const url = `${gw}/run/v1/events`;
    table.add(
      `POST /run/v1/events (new, 201)${rate > 0 ? ` at ${rate}/s` : ''}`,
      await measure({ url, method: 'POST', headers: events.headers, ...spec, expectStatus: 201 }, settings.load),
    );
    if (rate > 0) return;
    table.add(
      'POST /run/v1/events (replayed, 200)',
      await measure(
        { url, method: 'POST', headers: events.headers, body: events.replayBody, expectStatus: 200 },
        settings.load,
      ),
    );
  });
}
