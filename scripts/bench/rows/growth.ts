// Growth: list and get latency as a project fills (and other tenants hold as many rows), one request at a time.
import { proj, projectPath, type BenchContext } from '../context';
import { agentsIn, must, pool, sequential, sleep } from '../helpers';
import type { LoadResult } from '../load';
import { dbPrefix, runId } from '../run';
import { seedApiKeys } from '../seed';
import { settled } from '../stacks';

interface Step {
  size: number;
  others: number;
  list: LoadResult;
  get: LoadResult;
  seedS: number;
}

export async function growthRows(ctx: BenchContext) {
  const { settings } = ctx;
  await settled(ctx.stack.natsUrl);
  const gP = proj('growth');
  await agentsIn(
    ctx.admin,
    gP,
    Array.from({ length: 10 }, (_, i) => `agent-${i}`),
  );
  const t0 = Date.now();
  const ids: string[] = [];
  const first = Math.min(1000, settings.growthSizes[0]!);
  await pool(first, 16, async (i) => {
    ids.push(
      (
        await must(
          ctx.admin.post(`${projectPath(gP)}/api-keys`, { agentId: `agent-${i % 10}`, name: `g${i}` }),
          201,
          'api key',
        )
      ).data.apiKey.id,
    );
  });
  const apiRate = first / ((Date.now() - t0) / 1000);
  // One request at a time, a fixed number of them, with a long timeout: at the larger sizes one list call can take
  // seconds on FerretDB v1, and a figure is worth more than a timeout.
  const samples = settings.quick ? 3 : 15;
  const sampleMs = settings.quick ? 1_000 : 5_000;
  const steps = await growthSteps(ctx, ids, samples, sampleMs);
  growthFactorRow(ctx, steps);
  ctx.carry.growthNote = `growth: requests one at a time per size for ${sampleMs / 1000} s and at least ${samples} (at most a minute) (req/s = 1000 / mean ms; p99 is the slowest when fewer than 100); seeding: ${apiRate.toFixed(0)} API keys/s through the API (16 at a time), then direct inserts of the same documents`;
  if (!settings.growthSizes.includes(100_000))
    ctx.carry.growthNote += '; 100k step not run (BENCH_GROWTH=1000,10000,100000 adds it)';
}

/**
 * Direct inserts bypass the service, so its list cache and key count have not seen them: one create and revoke
 * through the API afterwards is the change every replica hears of (the next list reads the database again).
 */
async function seedDirect(ctx: BenchContext, tenantId: string, projectId: string, n: number) {
  const p = { tenantId, projectId };
  await seedApiKeys(ctx.infra.MONGO_URL, dbPrefix, p, n);
  await agentsIn(ctx.admin, p, ['agent-0']);
  const made = (
    await must(
      ctx.admin.post(`${projectPath(p)}/api-keys`, { agentId: 'agent-0', name: 'after seeding' }),
      201,
      'api key',
    )
  ).data.apiKey.id;
  await must(ctx.admin.delete(`${projectPath(p)}/api-keys/${made}`), 204, 'api key revoke');
}

/** Each size: the project filled to it (and as many rows again in other tenants), then get and list sampled. */
async function growthSteps(ctx: BenchContext, ids: string[], samples: number, sampleMs: number): Promise<Step[]> {
  const gP = proj('growth');
  const url = `${ctx.gw}${projectPath(gP)}/api-keys`;
  let have = ids.length;
  let others = 0;
  const steps: Step[] = [];
  for (const size of ctx.settings.growthSizes) {
    const s0 = Date.now();
    if (size > have) await seedDirect(ctx, gP.tenantId, gP.projectId, size - have);
    if (size > others) await seedDirect(ctx, `bench-other-${runId}-${size}`, 'p-other', size - others);
    const seedS = (Date.now() - s0) / 1000;
    // as a database in service would have: statistics of the new rows (the dev database gathers them every 5 s)
    await sleep(12_000);
    have = Math.max(have, size);
    others = Math.max(others, size);
    // get first: a list call the gateway gave up on (504 after its NATS timeout) keeps the database busy a while
    const get = await sequential(`${url}/${ids[0]}`, ctx.adminH, samples, sampleMs);
    const list = await sequential(`${url}?limit=10`, ctx.adminH, samples, sampleMs);
    steps.push({ size, others, list, get, seedS });
    ctx.table.add(
      `list API keys, ${size} in the project (+${others} elsewhere)`,
      list,
      undefined,
      `seeded in ${seedS.toFixed(1)} s`,
    );
    ctx.table.add(`get API key, ${size} in the project (+${others} elsewhere)`, get);
  }
  return steps;
}

function growthFactorRow(ctx: BenchContext, steps: Step[]) {
  const first = steps[0];
  const last = steps[steps.length - 1];
  if (!first || !last || last === first) return;
  const factor = last.list.p50 / Math.max(first.list.p50, 0.5);
  const row = ctx.table.add(
    `list p50 growth ${first.size} -> ${last.size}`,
    { p50: last.list.p50 },
    { text: 'p50 at 100k <= 2 x p50 at 1k', ok: () => last.size >= 100_000 && factor <= 2 },
    `${factor.toFixed(2)} x`,
  );
  row.figure = `p50 ${first.list.p50} → ${last.list.p50} ms, ${factor.toFixed(2)} ×`;
}
