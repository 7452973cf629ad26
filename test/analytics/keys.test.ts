import { anAnalyticsKey, aProject, aTenantToken, client, eventually, projectPath } from '@platform/testkit';
import { admin, stack } from '../support/stack';

describe('analytics keys', () => {
  test('when a key is issued, then its value is shown once and the record can be read back, listed and deleted', async () => {
    const p = aProject();
    const res = await admin.post(`${projectPath(p)}/analytics-keys`, {
      integrationId: 'docs-site',
      name: 'Docs widget',
    });
    expect(res.status).toBe(201);
    const { analyticsKey, key } = res.body.data;
    expect(key).toMatch(/^ak_[0-9A-Za-z]{12}\.[A-Za-z0-9_-]{43}$/);
    expect(analyticsKey).toEqual({
      id: analyticsKey.publicId,
      publicId: key.slice(3, 15),
      name: 'Docs widget',
      integrationId: 'docs-site',
      keyPrefix: key.slice(0, 12),
      lastUsedAt: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });

    const read = await admin.get(`${projectPath(p)}/analytics-keys/${analyticsKey.id}`);
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual(analyticsKey);
    expect(JSON.stringify(read.body)).not.toContain(key);

    await anAnalyticsKey(admin, p, { integrationId: 'other-site' });
    const all = await admin.get(`${projectPath(p)}/analytics-keys`);
    expect(all.status).toBe(200);
    expect(all.body.pagination).toMatchObject({ page: 1, limit: 10, total: 2 });
    const filtered = await admin.get(`${projectPath(p)}/analytics-keys?integrationId=docs-site`);
    expect(filtered.body.data).toEqual([analyticsKey]);

    const del = await admin.delete(`${projectPath(p)}/analytics-keys/${analyticsKey.id}`);
    expect(del.status).toBe(204);
    expect((await admin.get(`${projectPath(p)}/analytics-keys/${analyticsKey.id}`)).status).toBe(404);
    expect((await admin.delete(`${projectPath(p)}/analytics-keys/${analyticsKey.id}`)).status).toBe(404);
  });

  test('when a key is used, then lastUsedAt is recorded', async () => {
    const p = aProject();
    const { key, analyticsKey } = await anAnalyticsKey(admin, p);
    expect(
      (await client(stack.analyticsUrl, key).post('/events', { entityType: 'message', messageId: 'm', type: 't' }))
        .status,
    ).toBe(201);
    const used = await eventually(async () => {
      const read = await admin.get(`${projectPath(p)}/analytics-keys/${analyticsKey.id}`);
      return read.body.data.lastUsedAt ? read.body.data : undefined;
    }, 'lastUsedAt to be recorded');
    expect(Date.parse(used.lastUsedAt)).toBeGreaterThanOrEqual(Date.parse(used.createdAt));
  });

  test('when the body lacks integrationId or has an invalid one, then it answers 400 and issues nothing', async () => {
    const p = aProject();
    const missing = await admin.post(`${projectPath(p)}/analytics-keys`, { name: 'x' });
    expect(missing.status).toBe(400);
    expect(missing.body.errors).toEqual([expect.objectContaining({ pointer: '/integrationId' })]);
    const invalid = await admin.post(`${projectPath(p)}/analytics-keys`, { name: 'x', integrationId: 'has spaces' });
    expect(invalid.status).toBe(400);
    const list = await admin.get(`${projectPath(p)}/analytics-keys`);
    expect(list.body.data).toEqual([]);
  });

  test("when a tenant's token asks for another tenant's keys, then it answers 403; a viewer cannot issue keys", async () => {
    const p = aProject();
    const other = aProject();
    const token = await aTenantToken(admin, p.tenantId, 'admin');
    const own = client(stack.gatewayUrl, token);
    expect((await own.post(`${projectPath(p)}/analytics-keys`, { integrationId: 'web', name: 'ok' })).status).toBe(201);
    expect((await own.get(`${projectPath(other)}/analytics-keys`)).status).toBe(403);
    const viewer = client(stack.gatewayUrl, await aTenantToken(admin, p.tenantId, 'viewer'));
    expect((await viewer.get(`${projectPath(p)}/analytics-keys`)).status).toBe(200);
    expect((await viewer.post(`${projectPath(p)}/analytics-keys`, { integrationId: 'web', name: 'no' })).status).toBe(
      403,
    );
  });

  test("when a key is deleted through another project's path, then it is not found and keeps working", async () => {
    const p = aProject();
    const other = { tenantId: p.tenantId, projectId: aProject().projectId };
    const { key, analyticsKey } = await anAnalyticsKey(admin, p);
    expect((await admin.delete(`${projectPath(other)}/analytics-keys/${analyticsKey.id}`)).status).toBe(404);
    expect(
      (await client(stack.analyticsUrl, key).post('/events', { entityType: 'search', searchQuery: 'q', type: 't' }))
        .status,
    ).toBe(201);
  });
});
