import { generateKeyPairSync } from 'node:crypto';
import { appChanged, getAppForAuth } from '@platform/contracts';
import {
  aKeyPair,
  anApp,
  aProject,
  aTenantToken,
  client,
  eventually,
  projectPath,
  requestSubject,
} from '@platform/testkit';
import { admin, stack } from '../support/stack';
import { adminNats } from '../support/connections';

const nats = adminNats(stack);

async function appForAuth(appId: string) {
  return requestSubject<{ ok: boolean; body: { app: any } }>(
    stack.env.NATS_URL!,
    getAppForAuth.subject,
    { appId },
    5000,
  );
}

const webClientBody = (over: Record<string, unknown> = {}) => ({
  name: 'Docs widget',
  type: 'web_client',
  config: {
    type: 'web_client',
    webClient: { allowedDomains: ['docs.example.com', '*.example.org'], audience: 'widget' },
  },
  ...over,
});

describe('apps', () => {
  test('when a web_client app is created, then it answers 201 with {data:{app}}, an app_ id, allowAnonymous false by default, and reads back', async () => {
    const p = aProject();
    const res = await admin.post(
      `${projectPath(p)}/apps`,
      webClientBody({ defaultAgentId: 'support-bot', description: 'on the docs site' }),
    );
    expect(res.status).toBe(201);
    const app = res.body.data.app;
    expect(app.id).toMatch(/^app_[A-Za-z0-9]+$/);
    expect(app).toMatchObject({
      name: 'Docs widget',
      type: 'web_client',
      enabled: true,
      tenantId: p.tenantId,
      projectId: p.projectId,
      defaultAgentId: 'support-bot',
      description: 'on the docs site',
      lastUsedAt: null,
      config: {
        type: 'web_client',
        webClient: {
          allowAnonymous: false,
          allowedDomains: ['docs.example.com', '*.example.org'],
          audience: 'widget',
          publicKeys: [],
        },
      },
    });
    const read = await admin.get(`${projectPath(p)}/apps/${app.id}`);
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual(app);
  });

  test('when config.type differs from the app type, or a web_client app has no webClient config, then it answers 400 and stores nothing', async () => {
    const p = aProject();
    const mismatch = await admin.post(`${projectPath(p)}/apps`, webClientBody({ type: 'api' }));
    expect(mismatch.status).toBe(400);
    expect(mismatch.contentType).toMatch(/application\/problem\+json/);
    const missing = await admin.post(`${projectPath(p)}/apps`, {
      name: 'x',
      type: 'web_client',
      config: { type: 'web_client' },
    });
    expect(missing.status).toBe(400);
    const badType = await admin.post(`${projectPath(p)}/apps`, {
      name: 'x',
      type: 'desktop',
      config: { type: 'desktop' },
    });
    expect(badType.status).toBe(400);
    const list = await admin.get(`${projectPath(p)}/apps`);
    expect(list.body.data).toEqual([]);
    expect(list.body.tenantHasAnyApps).toBe(false);
  });

  test('when apps are listed, then the type filter applies, role is owner for the admin and the token role otherwise, and tenantHasAnyApps is reported', async () => {
    const p = aProject();
    const other = { tenantId: p.tenantId, projectId: `${p.projectId}-b` };
    await anApp(admin, p);
    await anApp(admin, p, { type: 'api' });
    await anApp(admin, other, { type: 'support_copilot' });

    const all = await admin.get(`${projectPath(p)}/apps`);
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({
      role: 'owner',
      tenantHasAnyApps: true,
      pagination: { total: 2, page: 1, limit: 10, pages: 1 },
    });
    const webOnly = await admin.get(`${projectPath(p)}/apps?type=web_client`);
    expect(webOnly.body.data.map((a: any) => a.type)).toEqual(['web_client']);

    const tenantWide = await admin.get(`/manage/tenants/${p.tenantId}/apps`);
    expect(tenantWide.body.pagination.total).toBe(3);
    const copilots = await admin.get(`/manage/tenants/${p.tenantId}/apps?type=support_copilot`);
    expect(copilots.body.data).toHaveLength(1);
    expect(copilots.body.data[0]).toMatchObject({
      type: 'support_copilot',
      projectId: other.projectId,
      config: { type: 'support_copilot', supportCopilot: { audience: null } },
    });

    const viewer = client(stack.gatewayUrl, await aTenantToken(admin, p.tenantId, 'viewer'));
    const asViewer = await viewer.get(`${projectPath(p)}/apps?type=api`);
    expect(asViewer.status).toBe(200);
    expect(asViewer.body).toMatchObject({ role: 'viewer', tenantHasAnyApps: true });
    expect(asViewer.body.data).toHaveLength(1);

    const empty = aProject();
    const none = await admin.get(`/manage/tenants/${empty.tenantId}/apps`);
    expect(none.body).toMatchObject({ data: [], tenantHasAnyApps: false, role: 'owner' });
  });

  test('when a viewer tries to create an app, or a token of another tenant reads one, then it answers 403', async () => {
    const p = aProject();
    const viewer = client(stack.gatewayUrl, await aTenantToken(admin, p.tenantId, 'viewer'));
    expect((await viewer.post(`${projectPath(p)}/apps`, webClientBody())).status).toBe(403);
    const app = await anApp(admin, p);
    const stranger = client(stack.gatewayUrl, await aTenantToken(admin, aProject().tenantId, 'owner'));
    expect((await stranger.get(`${projectPath(p)}/apps/${app.id}`)).status).toBe(403);
  });

  test('when an app is updated, then name, enabled and webClient settings change, other fields stay, and the type cannot change', async () => {
    const p = aProject();
    const app = await anApp(admin, p);
    const res = await admin.patch(`${projectPath(p)}/apps/${app.id}`, {
      name: 'renamed',
      enabled: false,
      config: { webClient: { allowAnonymous: false, audience: null } },
    });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      name: 'renamed',
      enabled: false,
      defaultAgentId: 'agent-1',
      config: {
        type: 'web_client',
        webClient: { allowAnonymous: false, allowedDomains: ['app.example.com'], audience: null },
      },
    });
    expect((await admin.get(`${projectPath(p)}/apps/${app.id}`)).body.data).toEqual(res.body.data);
    const retype = await admin.patch(`${projectPath(p)}/apps/${app.id}`, { config: { type: 'api' } });
    expect(retype.status).toBe(422);
    const apiApp = await anApp(admin, p, { type: 'api' });
    const wrongPart = await admin.patch(`${projectPath(p)}/apps/${apiApp.id}`, {
      config: { webClient: { allowAnonymous: true } },
    });
    expect(wrongPart.status).toBe(422);
    expect((await admin.patch(`${projectPath(p)}/apps/app_missing`, { name: 'x' })).status).toBe(404);
  });

  test('when an app is created, changed and deleted, then app.created, app.updated and app.deleted events are published, the delete answers 204, and lookups no longer find it', async () => {
    const p = aProject();
    const events: Array<{ type: string; data: any }> = [];
    const evSub = nats.nc.subscribe(`evt.${p.tenantId}.${p.projectId}.app.*.v1`, {
      callback: (_e, m) => events.push(JSON.parse(new TextDecoder().decode(m.data))),
    });
    await nats.nc.flush();
    const app = await anApp(admin, p);
    expect((await admin.patch(`${projectPath(p)}/apps/${app.id}`, { description: 'changed' })).status).toBe(200);
    const changed = new Promise<unknown>((resolve) => {
      const sub = nats.nc.subscribe(appChanged.subject);
      void (async () => {
        for await (const m of sub) {
          const body = JSON.parse(new TextDecoder().decode(m.data));
          if (body.appId === app.id) {
            sub.unsubscribe();
            resolve(body);
          }
        }
      })();
    });
    await nats.nc.flush();
    const del = await admin.delete(`${projectPath(p)}/apps/${app.id}`);
    expect(del.status).toBe(204);
    await expect(changed).resolves.toEqual({ appId: app.id, revision: 3, app: null });
    expect((await admin.get(`${projectPath(p)}/apps/${app.id}`)).status).toBe(404);
    expect((await admin.delete(`${projectPath(p)}/apps/${app.id}`)).status).toBe(404);
    expect((await appForAuth(app.id)).body.app).toBeNull();
    await eventually(() => events.length >= 3, 'three app events');
    evSub.unsubscribe();
    expect(events.map((e) => e.type)).toEqual(['app.created', 'app.updated', 'app.deleted']);
    expect(events[0]!.data.app).toMatchObject({ id: app.id, name: 'test app' });
    expect(events[1]!.data.app).toMatchObject({ id: app.id, description: 'changed' });
    expect(events[2]!.data).toEqual({ id: app.id });
  });

  test('when keys of every algorithm are registered, then they are listed with addedAt, and the internal lookup returns the app with its keys', async () => {
    const p = aProject();
    const app = await anApp(admin, p, { defaultAgentId: 'bot' });
    const algorithms = ['RS256', 'RS384', 'RS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;
    for (const algorithm of algorithms) {
      const res = await admin.post(`${projectPath(p)}/apps/${app.id}/auth/keys`, {
        kid: `k-${algorithm}`,
        algorithm,
        publicKey: aKeyPair(algorithm).publicKey,
      });
      expect(res.status).toBe(201);
      expect(res.body.data).toMatchObject({ kid: `k-${algorithm}`, algorithm });
      expect(res.body.data.publicKey).toMatch(/^-----BEGIN PUBLIC KEY-----/);
      expect(new Date(res.body.data.addedAt).toISOString()).toBe(res.body.data.addedAt);
    }
    const keys = await admin.get(`${projectPath(p)}/apps/${app.id}/auth/keys`);
    expect(keys.status).toBe(200);
    expect(keys.body.data.map((k: any) => k.kid)).toEqual(algorithms.map((a) => `k-${a}`));
    const read = await admin.get(`${projectPath(p)}/apps/${app.id}`);
    expect(read.body.data.config.webClient.publicKeys).toEqual(keys.body.data);

    const internal = await appForAuth(app.id);
    expect(internal.ok).toBe(true);
    expect(internal.body.app).toMatchObject({
      id: app.id,
      tenantId: p.tenantId,
      projectId: p.projectId,
      enabled: true,
      type: 'web_client',
      defaultAgentId: 'bot',
      config: {
        type: 'web_client',
        webClient: { allowAnonymous: true, allowedDomains: ['app.example.com'], audience: 'platform-run' },
      },
    });
    expect(internal.body.app.publicKeys).toEqual(keys.body.data);
  });

  test('when a key does not parse or does not fit its algorithm, then it answers 422 and nothing is stored', async () => {
    const p = aProject();
    const app = await anApp(admin, p);
    const path = `${projectPath(p)}/apps/${app.id}/auth/keys`;
    const rsa = aKeyPair('RS256').publicKey;
    const p256 = aKeyPair('ES256').publicKey;
    const weakRsa = generateKeyPairSync('rsa', { modulusLength: 1024 })
      .publicKey.export({ type: 'spki', format: 'pem' })
      .toString();
    const privatePem = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const cases = [
      { kid: 'a', algorithm: 'ES256', publicKey: rsa },
      { kid: 'b', algorithm: 'ES384', publicKey: p256 },
      { kid: 'c', algorithm: 'ES512', publicKey: p256 },
      { kid: 'd', algorithm: 'EdDSA', publicKey: p256 },
      { kid: 'e', algorithm: 'RS256', publicKey: aKeyPair('EdDSA').publicKey },
      {
        kid: 'f',
        algorithm: 'RS256',
        publicKey: '-----BEGIN PUBLIC KEY-----\nnot base64 at all\n-----END PUBLIC KEY-----',
      },
      { kid: 'g', algorithm: 'RS256', publicKey: weakRsa },
      { kid: 'h', algorithm: 'EdDSA', publicKey: privatePem },
    ];
    for (const body of cases) {
      const res = await admin.post(path, body);
      expect({ kid: body.kid, status: res.status }).toEqual({ kid: body.kid, status: 422 });
      expect(res.body.errors[0].pointer).toBe('/publicKey');
    }
    const unknownAlg = await admin.post(path, { kid: 'x', algorithm: 'HS256', publicKey: rsa });
    expect(unknownAlg.status).toBe(400);
    expect((await admin.get(path)).body.data).toEqual([]);
  });

  test('when a kid is registered twice, then the second answers 409; when a key is deleted, then it answers 204 and is gone', async () => {
    const p = aProject();
    const app = await anApp(admin, p);
    const path = `${projectPath(p)}/apps/${app.id}/auth/keys`;
    expect(
      (await admin.post(path, { kid: 'main.v1', algorithm: 'ES256', publicKey: aKeyPair('ES256').publicKey })).status,
    ).toBe(201);
    const dup = await admin.post(path, { kid: 'main.v1', algorithm: 'EdDSA', publicKey: aKeyPair('EdDSA').publicKey });
    expect(dup.status).toBe(409);
    expect((await admin.get(path)).body.data).toHaveLength(1);
    expect((await admin.delete(`${path}/main.v1`)).status).toBe(204);
    expect((await admin.get(path)).body.data).toEqual([]);
    expect((await admin.delete(`${path}/main.v1`)).status).toBe(404);
    expect((await admin.get(`${projectPath(p)}/apps/app_nope/auth/keys`)).status).toBe(404);
  });
});
