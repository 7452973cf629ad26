// Management on the real database (admin token; the credential is cached by the gateway): create, get, and the list
// of API keys read against the find it makes, on a project of 21 keys and one of 1,000.
import { findCeiling } from '../ceiling';
import { besideB, cpuPerOperation, proj, projectPath, type BenchContext, type Project } from '../context';
import { agentsIn, must } from '../helpers';
import { measure, type LoadSpec } from '../load';
import { measurePaired } from '../paired';
import { dbPrefix } from '../run';
import { seedApiKeys } from '../seed';
import { ceilingAtLeast } from '../table';

export async function manageRows(ctx: BenchContext) {
  const { table, gw, admin, adminH } = ctx;
  const load = ctx.settings.load;
  // A project of 1,000 keys (direct inserts of management's own documents), seeded first so that the database
  // has gathered its statistics by the time it is listed.
  const kP = proj('manage1k');
  await seedApiKeys(ctx.infra.MONGO_URL, dbPrefix, kP, 1000);
  const mP = proj('manage');
  await agentsIn(admin, mP);
  let keyId = '';
  for (let i = 0; i < 21; i++)
    keyId = (
      await must(admin.post(`${projectPath(mP)}/api-keys`, { agentId: 'agent-1', name: `k${i}` }), 201, 'api key')
    ).data.apiKey.id;
  const createP = proj('create');
  await agentsIn(admin, createP);
  const create: LoadSpec = {
    url: `${gw}${projectPath(createP)}/api-keys`,
    method: 'POST',
    headers: adminH,
    body: JSON.stringify({ agentId: 'agent-1', name: 'bench' }),
    expectStatus: 201,
  };
  // Read against B measured beside it: the machine's speed moves by a fifth between runs minutes apart.
  table.addPaired(
    'management create API key',
    await measurePaired(create, [besideB(ctx)], load),
    // Issue 20 compares create with upstream's 50 req/s on the same machine.
    { text: '> upstream 50 req/s', ok: (r) => (r.rps ?? 0) > 50 },
  );
  // The CPU each process spends on a created key: the row's rate moves with the database's state from run to run.
  await cpuPerOperation(ctx, 'created API key', create);
  table.add(
    'management get API key',
    await measure({ url: `${gw}${projectPath(mP)}/api-keys/${keyId}`, headers: adminH }, load),
  );
  await listRows(ctx, '21', mP, 21);
  await listRows(ctx, '1,000', kP, 1000);
}

/**
 * The list of API keys against the find it makes (services/management/src/data/api-key.repo.ts: same filter, sort,
 * limit and projection), on the same rows, with as many concurrent callers as the HTTP row has connections.
 */
async function listRows(ctx: BenchContext, label: string, p: Project, size: number) {
  const { table, gw, adminH } = ctx;
  const load = ctx.settings.load;
  const keyPage = {
    filter: { tenantId: p.tenantId, projectId: p.projectId, live: true },
    sort: { createdAt: -1 as const, _id: 1 as const },
    limit: 10,
    projection: {
      pendingEvents: 0,
      outboxPending: 0,
      outboxSeq: 0,
      outboxDelete: 0,
      outboxBatch: 0,
      keyHash: 0,
      live: 0,
    },
  };
  const raw = await findCeiling(
    ctx.infra.MONGO_URL,
    dbPrefix,
    'management',
    'apiKeys',
    keyPage,
    load,
    load.connections,
  );
  table.addCeiling(
    `find of a key page (${label} keys)`,
    raw,
    `finds/s, ${load.connections} concurrent callers; ${raw.returned} rows a page`,
  );
  // Read against B measured beside it, as create is.
  const row = table.addPaired(
    `management list API keys (10 a page of ${label})`,
    await measurePaired({ url: `${gw}${projectPath(p)}/api-keys?limit=10`, headers: adminH }, [besideB(ctx)], load),
  );
  table.target(
    table.againstCeiling(row, `find of a key page (${label} keys)`),
    '>= 0.5 x raw find',
    ceilingAtLeast(0.5),
  );
  if (size !== 21) return;
  // The upstream figure (issue 20): one Hono process on PostgreSQL, 10 connections, 1,080 req/s on this machine.
  const ten = table.addPaired(
    `management list API keys (10 a page of 21), 10 connections`,
    await measurePaired(
      { url: `${gw}${projectPath(p)}/api-keys?limit=10`, headers: adminH, connections: 10 },
      [besideB(ctx)],
      load,
    ),
  );
  table.target(ten, '> upstream 1,080 req/s', (r) => (r.rps ?? 0) > 1080);
  // The CPU each process spends on a listed page: a cached page is mostly the gateway and the bus.
  await cpuPerOperation(ctx, 'listed page of 21 keys', {
    url: `${gw}${projectPath(p)}/api-keys?limit=10`,
    headers: adminH,
  });
}
