import {
  anAgentNamed,
  eventually,
  startPrivateStack,
  uniqueId,
  withDatabase,
  type PrivateStack,
} from '@platform/testkit';

/**
 * A change whose management process stopped before it knew the outcome leaves its intent behind (written before the
 * change ran). The next management process records it as `unknown`, once, and lets the intent go.
 */
let stack: PrivateStack;

beforeAll(async () => {
  stack = await startPrivateStack({ name: 'audit-settle', services: ['management', 'run-auth'] });
}, 180_000);

afterAll(async () => {
  await stack?.stop();
});

type Db = Parameters<Parameters<typeof withDatabase>[2]>[0];
const intents = <T>(fn: (c: ReturnType<Db['collection']>) => Promise<T>) =>
  withDatabase(stack.env.MONGO_URL!, 'management', (db) => fn(db.collection('auditIntents')), stack.dbPrefix);

test('when management stopped while a change ran, then the next process records the change once as unknown and keeps no intent', async () => {
  const tenantId = uniqueId('t-settle');
  // A change that completes normally leaves no intent.
  await anAgentNamed(stack.admin, { tenantId, projectId: 'p-1' }, 'agent-1');
  expect(
    (await stack.admin.post(`/manage/tenants/${tenantId}/projects/p-1/api-keys`, { agentId: 'agent-1', name: 'k' }))
      .status,
  ).toBe(201);
  await eventually(
    async () => ((await intents((c) => c.countDocuments({ tenantId }))) === 0 ? true : undefined),
    "the completed change's intent gone",
    10_000,
  );

  // The intent of a change whose process died mid-way, as management writes it before the change runs.
  const id = `aud_${uniqueId('lost')}`;
  await intents((c) =>
    c.insertOne({
      _id: id as never,
      tenantId,
      projectId: 'p-1',
      // Older than AUDIT_PENDING_SETTLE_SECONDS (300 s by default).
      at: new Date(Date.now() - 600_000),
      completedAt: null,
      actor: { kind: 'admin', userId: null, role: 'platform-admin', credentialId: 'admin-token', via: 'bearer' },
      actorIds: ['admin-token'],
      operationId: 'deleteApiKey',
      method: 'delete',
      service: 'management',
      resourceType: 'api-keys',
      resourceId: 'k-lost',
      before: null,
      after: null,
      outcome: 'pending',
      status: null,
      errorCode: null,
      source: { ip: '127.0.0.1', userAgent: 'test', requestId: 'req-lost' },
    }),
  );
  expect(await intents((c) => c.countDocuments({ _id: id as never }))).toBe(1);
  await stack.kill(stack.process('management'));
  await stack.startProcess('management');

  const entries = await eventually(
    async () => {
      const res = await stack.admin.get(`/manage/tenants/${tenantId}/audit-log?operationId=deleteApiKey`);
      return res.body.data?.length ? res.body.data : undefined;
    },
    'the lost change recorded',
    30_000,
  );
  expect(entries).toEqual([
    expect.objectContaining({
      id,
      outcome: 'unknown',
      resourceId: 'k-lost',
      status: null,
      completedAt: expect.any(String),
    }),
  ]);
  await eventually(
    async () => ((await intents((c) => c.countDocuments({ _id: id as never }))) === 0 ? true : undefined),
    'the intent gone',
    10_000,
  );
  // Still one entry of it (the sweep runs again on its timer and at each start).
  await stack.kill(stack.process('management'));
  await stack.startProcess('management');
  expect(
    (await stack.admin.get(`/manage/tenants/${tenantId}/audit-log?operationId=deleteApiKey`)).body.data,
  ).toHaveLength(1);
}, 120_000);
