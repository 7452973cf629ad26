import { aProject, aTenantToken, client, projectPath } from '@platform/testkit';
import { admin, stack } from '../support/stack';
import { serviceDatabase } from '../support/connections';
import { expectProblem } from '../support/expect-problem';

const db = serviceDatabase(stack, 'management');

const aCredential = (overrides: Record<string, unknown> = {}) => ({
  id: 'cred-1',
  name: 'GitHub token',
  type: 'memory',
  credentialStoreId: 'memory-default',
  retrievalParams: { key: 'github-token' },
  ...overrides,
});

describe('credentials', () => {
  test('when a credential is created, then it can be read, listed, changed and deleted', async () => {
    const p = aProject();
    const P = projectPath(p);
    const created = await admin.post(
      `${P}/credentials`,
      aCredential({ toolId: 'tool-1', userId: 'user-1', createdBy: 'alice' }),
    );
    expect(created.status).toBe(201);
    expect(created.body.data).toEqual({
      id: 'cred-1',
      name: 'GitHub token',
      type: 'memory',
      credentialStoreId: 'memory-default',
      createdBy: 'alice',
      toolId: 'tool-1',
      userId: 'user-1',
      retrievalParams: { key: 'github-token' },
      externalAgents: [],
      tools: [],
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });

    const read = await admin.get(`${P}/credentials/cred-1`);
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual(created.body.data);

    const list = await admin.get(`${P}/credentials`);
    expect(list.status).toBe(200);
    expect(list.body).toEqual({
      data: [created.body.data],
      pagination: { page: 1, limit: 10, total: 1, pages: 1, completedCount: 1 },
    });

    const changed = await admin.patch(`${P}/credentials/cred-1`, {
      name: 'GitHub PAT',
      retrievalParams: { key: 'gh' },
      toolId: null,
    });
    expect(changed.status).toBe(200);
    expect(changed.body.data).toMatchObject({
      name: 'GitHub PAT',
      retrievalParams: { key: 'gh' },
      toolId: null,
      userId: 'user-1',
      createdAt: created.body.data.createdAt,
    });
    expect((await admin.get(`${P}/credentials/cred-1`)).body.data).toEqual(changed.body.data);

    const deleted = await admin.delete(`${P}/credentials/cred-1`);
    expect(deleted.status).toBe(204);
    expect(deleted.body).toBeUndefined();
    expectProblem(await admin.get(`${P}/credentials/cred-1`), 404);
    expectProblem(await admin.delete(`${P}/credentials/cred-1`), 404);
  });

  test('when the same create is sent again with identical content, then it answers 200 with the stored record', async () => {
    const p = aProject();
    const P = projectPath(p);
    const first = await admin.post(`${P}/credentials`, aCredential());
    expect(first.status).toBe(201);
    const again = await admin.post(`${P}/credentials`, aCredential({ retrievalParams: { key: 'github-token' } }));
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
  });

  test('when an existing id is created with other content, then it answers 409 and keeps the stored record', async () => {
    const p = aProject();
    const P = projectPath(p);
    const first = await admin.post(`${P}/credentials`, aCredential());
    expectProblem(await admin.post(`${P}/credentials`, aCredential({ name: 'Other' })), 409);
    expect((await admin.get(`${P}/credentials/cred-1`)).body.data).toEqual(first.body.data);
  });

  const long = 'x'.repeat(257);
  test.each([
    ['the id is missing', { id: undefined }, 400, '/id'],
    ['the id is not a RID', { id: 'has space' }, 400, '/id'],
    ['the id is longer than 255', { id: 'a'.repeat(256) }, 400, '/id'],
    ['credentialStoreId is missing', { credentialStoreId: undefined }, 400, '/credentialStoreId'],
    ['credentialStoreId is not a RID', { credentialStoreId: 'memory/default' }, 400, '/credentialStoreId'],
    ['name is missing', { name: undefined }, 400, '/name'],
    ['name is longer than 256', { name: long }, 400, '/name'],
    ['name contains a NUL character', { name: 'a\u0000b' }, 400, '/name'],
    ['type is missing', { type: undefined }, 400, '/type'],
    ['type is not a store kind', { type: 'vault' }, 400, '/type'],
    ['createdBy is longer than 256', { createdBy: long }, 400, '/createdBy'],
    ['toolId is longer than 256', { toolId: long }, 400, '/toolId'],
    ['userId is longer than 256', { userId: long }, 400, '/userId'],
    ['retrievalParams is not an object', { retrievalParams: 'key' }, 400, '/retrievalParams'],
    ['a field is unknown', { secret: 'x' }, 400, undefined],
    ['type does not match the named store', { type: 'keychain' }, 422, '/type'],
  ])('when %s, then create answers a problem and stores nothing', async (_what, overrides, status, pointer) => {
    const p = aProject();
    const P = projectPath(p);
    const body = aCredential(overrides);
    const res = await admin.post(`${P}/credentials`, JSON.parse(JSON.stringify(body)));
    expectProblem(res, status, pointer);
    expect((await admin.get(`${P}/credentials`)).body.pagination.total).toBe(0);
  });

  test.each([
    ['name is empty', { name: '' }, 400, '/name'],
    ['type is not a store kind', { type: 'vault' }, 400, '/type'],
    ['toolId is longer than 256', { toolId: 'x'.repeat(257) }, 400, '/toolId'],
    ['the id would change', { id: 'other' }, 422, '/id'],
    ['type would not match the store', { type: 'connbroker1' }, 422, '/type'],
  ])('when an update says %s, then it answers a problem and changes nothing', async (_what, body, status, pointer) => {
    const p = aProject();
    const P = projectPath(p);
    const created = await admin.post(`${P}/credentials`, aCredential());
    expectProblem(await admin.patch(`${P}/credentials/cred-1`, body), status, pointer);
    expect((await admin.get(`${P}/credentials/cred-1`)).body.data).toEqual(created.body.data);
  });

  test('when a credential that does not exist is read, changed or deleted, then it answers 404', async () => {
    const P = projectPath(aProject());
    expectProblem(await admin.get(`${P}/credentials/nope`), 404);
    expectProblem(await admin.patch(`${P}/credentials/nope`, { name: 'x' }), 404);
    expectProblem(await admin.delete(`${P}/credentials/nope`), 404);
  });

  test('when credentials are listed with page and limit, then pages are cut as asked and bad bounds are 400', async () => {
    const p = aProject();
    const P = projectPath(p);
    for (const id of ['c1', 'c2', 'c3'])
      expect((await admin.post(`${P}/credentials`, aCredential({ id }))).status).toBe(201);
    const page2 = await admin.get(`${P}/credentials?page=2&limit=2`);
    expect(page2.status).toBe(200);
    expect(page2.body.data).toHaveLength(1);
    expect(page2.body.pagination).toEqual({ page: 2, limit: 2, total: 3, pages: 2, completedCount: 3 });
    const all = await admin.get(`${P}/credentials?limit=100`);
    expect(all.body.data.map((c: { id: string }) => c.id).sort()).toEqual(['c1', 'c2', 'c3']);
    expectProblem(await admin.get(`${P}/credentials?limit=0`), 400, '#query/limit');
    expectProblem(await admin.get(`${P}/credentials?limit=101`), 400, '#query/limit');
    expectProblem(await admin.get(`${P}/credentials?page=0`), 400, '#query/page');
  });

  test('when the project id in the path is not valid, then it answers 400', async () => {
    expectProblem(await admin.get('/manage/tenants/t1/projects/Not_Valid/credentials'), 400, '#params/projectId');
  });

  test('when no credential is sent, then every credential operation answers 401', async () => {
    const P = projectPath(aProject());
    const anon = client(stack.gatewayUrl);
    expectProblem(await anon.get(`${P}/credentials`), 401);
    expectProblem(await anon.post(`${P}/credentials`, aCredential()), 401);
    expectProblem(await anon.get(`${P}/credentials/cred-1`), 401);
    expectProblem(await anon.patch(`${P}/credentials/cred-1`, { name: 'x' }), 401);
    expectProblem(await anon.delete(`${P}/credentials/cred-1`), 401);
    expectProblem(await anon.get(`${P}/credential-stores`), 401);
    expectProblem(await anon.post(`${P}/credential-stores/memory-default/credentials`, { key: 'k', value: 'v' }), 401);
  });

  test("when a tenant token reaches for another tenant's credential, then it answers 403 and sees nothing", async () => {
    const mine = aProject();
    const theirs = aProject();
    await admin.post(`${projectPath(theirs)}/credentials`, aCredential());
    const token = await aTenantToken(admin, mine.tenantId);
    const me = client(stack.gatewayUrl, token);
    expectProblem(await me.get(`${projectPath(theirs)}/credentials/cred-1`), 403);
    expectProblem(await me.get(`${projectPath(theirs)}/credentials`), 403);
    expectProblem(await me.patch(`${projectPath(theirs)}/credentials/cred-1`, { name: 'mine now' }), 403);
    expectProblem(await me.delete(`${projectPath(theirs)}/credentials/cred-1`), 403);
    expect((await admin.get(`${projectPath(theirs)}/credentials/cred-1`)).body.data.name).toBe('GitHub token');
    // Its own tenant works, and another project of the same tenant does not hold the credential.
    expect((await me.get(`${projectPath(mine)}/credentials`)).status).toBe(200);
    expectProblem(
      await me.get(`${projectPath({ tenantId: mine.tenantId, projectId: theirs.projectId })}/credentials/cred-1`),
      404,
    );
  });

  test('when a viewer token tries to create a credential, then it answers 403 and stores nothing', async () => {
    const p = aProject();
    const viewer = client(stack.gatewayUrl, await aTenantToken(admin, p.tenantId, 'viewer'));
    expectProblem(await viewer.post(`${projectPath(p)}/credentials`, aCredential()), 403);
    expect((await viewer.get(`${projectPath(p)}/credentials`)).body.pagination.total).toBe(0);
  });
});

describe('credential stores', () => {
  test('when stores are listed, then memory is available and the others say why they are not', async () => {
    const res = await admin.get(`${projectPath(aProject())}/credential-stores`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([
      { id: 'memory-default', type: 'memory', available: true, reason: null },
      { id: 'keychain-default', type: 'keychain', available: false, reason: expect.stringMatching(/keychain/i) },
      {
        id: 'connbroker1-default',
        type: 'connbroker1',
        available: false,
        reason: expect.stringMatching(/not configured/),
      },
      {
        id: 'connbroker2-default',
        type: 'connbroker2',
        available: false,
        reason: expect.stringMatching(/not configured/),
      },
    ]);
  });

  test('when a secret is put into the memory store, then only key, store and time come back and the database holds no plaintext', async () => {
    const p = aProject();
    const P = projectPath(p);
    const value = `very-secret-${Date.now()}-value`;
    const headerSecret = `bearer-in-metadata-${Date.now()}`;
    const res = await admin.post(`${P}/credential-stores/memory-default/credentials`, {
      key: 'github-token',
      value,
      metadata: { 'X-Api-Key': headerSecret },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      data: { key: 'github-token', storeId: 'memory-default', createdAt: expect.any(String) },
    });
    expect(JSON.stringify(res.body)).not.toContain(value);

    const replaced = await admin.post(`${P}/credential-stores/memory-default/credentials`, {
      key: 'github-token',
      value: `${value}-2`,
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body.data).toEqual(res.body.data);

    const rows = await db
      .collection('credentialStoreEntries')
      .find({ tenantId: p.tenantId, projectId: p.projectId })
      .toArray();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      key: 'github-token',
      storeId: 'memory-default',
      sealed: expect.stringMatching(/^v2\.[A-Za-z0-9_-]{8}\./),
    });
    const raw = JSON.stringify(rows);
    expect(raw).not.toContain(value);
    expect(raw).not.toContain(headerSecret);
  });

  test('when a credential naming a memory-store key is deleted, then the stored secret is removed too', async () => {
    const p = aProject();
    const P = projectPath(p);
    await admin.post(`${P}/credential-stores/memory-default/credentials`, { key: 'k-1', value: 'v-1' });
    await admin.post(`${P}/credentials`, aCredential({ retrievalParams: { key: 'k-1' } }));
    expect(
      await db.collection('credentialStoreEntries').countDocuments({ tenantId: p.tenantId, projectId: p.projectId }),
    ).toBe(1);
    expect((await admin.delete(`${P}/credentials/cred-1`)).status).toBe(204);
    expect(
      await db.collection('credentialStoreEntries').countDocuments({ tenantId: p.tenantId, projectId: p.projectId }),
    ).toBe(0);
  });

  test.each([
    ['the store is unknown', 'vault-default', { key: 'k', value: 'v' }, 404, undefined],
    ['the store is not available', 'keychain-default', { key: 'k', value: 'v' }, 422, undefined],
    ['the store id is not a RID', 'bad store', { key: 'k', value: 'v' }, 400, '#params/id'],
    ['the key is missing', 'memory-default', { value: 'v' }, 400, '/key'],
    ['the value is missing', 'memory-default', { key: 'k' }, 400, '/value'],
    ['the value is empty', 'memory-default', { key: 'k', value: '' }, 400, '/value'],
    [
      'a metadata key is not a header name',
      'memory-default',
      { key: 'k', value: 'v', metadata: { 'bad header': 'x' } },
      400,
      '/metadata/bad header',
    ],
    [
      'a metadata key is a reserved header',
      'memory-default',
      { key: 'k', value: 'v', metadata: { Connection: 'close' } },
      400,
      '/metadata/Connection',
    ],
    [
      'a metadata key is longer than 128',
      'memory-default',
      { key: 'k', value: 'v', metadata: { ['h'.repeat(129)]: 'x' } },
      400,
      undefined,
    ],
    [
      'a metadata value is longer than 1000',
      'memory-default',
      { key: 'k', value: 'v', metadata: { 'X-A': 'x'.repeat(1001) } },
      400,
      '/metadata/X-A',
    ],
    [
      'a metadata value is empty',
      'memory-default',
      { key: 'k', value: 'v', metadata: { 'X-A': '' } },
      400,
      '/metadata/X-A',
    ],
    ['a field is unknown', 'memory-default', { key: 'k', value: 'v', extra: 1 }, 400, undefined],
  ])(
    'when %s, then putting a secret answers a problem and stores nothing',
    async (_what, storeId, body, status, pointer) => {
      const p = aProject();
      expectProblem(
        await admin.post(`${projectPath(p)}/credential-stores/${encodeURIComponent(storeId)}/credentials`, body),
        status,
        pointer,
      );
      expect(
        await db.collection('credentialStoreEntries').countDocuments({ tenantId: p.tenantId, projectId: p.projectId }),
      ).toBe(0);
    },
  );

  test("when another tenant's token puts a secret, then it answers 403 and stores nothing", async () => {
    const theirs = aProject();
    const me = client(stack.gatewayUrl, await aTenantToken(admin, aProject().tenantId));
    expectProblem(
      await me.post(`${projectPath(theirs)}/credential-stores/memory-default/credentials`, { key: 'k', value: 'v' }),
      403,
    );
    expect(await db.collection('credentialStoreEntries').countDocuments({ tenantId: theirs.tenantId })).toBe(0);
  });
});

describe('the OpenAPI document', () => {
  test('when it is fetched, then every credential operation is there with its schemas', async () => {
    const doc = (await client(stack.gatewayUrl).get('/openapi.json')).body;
    const P = '/manage/tenants/{tenantId}/projects/{projectId}';
    const ops = {
      listCredentials: doc.paths[`${P}/credentials`].get,
      createCredential: doc.paths[`${P}/credentials`].post,
      getCredential: doc.paths[`${P}/credentials/{id}`].get,
      updateCredential: doc.paths[`${P}/credentials/{id}`].patch,
      deleteCredential: doc.paths[`${P}/credentials/{id}`].delete,
      listCredentialStores: doc.paths[`${P}/credential-stores`].get,
      createCredentialStoreEntry: doc.paths[`${P}/credential-stores/{id}/credentials`].post,
    };
    for (const [id, op] of Object.entries(ops)) expect(op.operationId).toBe(id);
    expect(ops.createCredential.requestBody.content['application/json'].schema.properties.type.enum).toEqual([
      'memory',
      'keychain',
      'connbroker1',
      'connbroker2',
    ]);
    expect(Object.keys(ops.createCredential.responses)).toEqual(expect.arrayContaining(['200', '201', '409']));
    expect(ops.deleteCredential.responses['204']).toBeDefined();
    expect(
      ops.createCredentialStoreEntry.responses['201'].content['application/json'].schema.properties.data.properties,
    ).toHaveProperty('storeId');
  });
});
