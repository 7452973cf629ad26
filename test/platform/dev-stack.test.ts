import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SERVICE_NAMES } from '@platform/contracts';
import { anInstallLink, aStoredAgent, client, freePort, http, startDevStack, type DevStack } from '@platform/testkit';

/*
 * The npm start stack (scripts/dev-stack.ts runs startDevStack with ports 3000, 3001, 3002 and 3100+): here on free
 * ports, with a NATS, databases and a Redis prefix of its own, walked through the way a developer would, with a
 * browser's requests (redirects followed by hand, links taken from the pages).
 */
let dev: DevStack;
let localDir: string;

beforeAll(async () => {
  localDir = mkdtempSync(join(tmpdir(), 'dev-stack-'));
  const [gatewayPort, analyticsPort, chatappFakePort] = [await freePort(), await freePort(), await freePort()];
  // Nine health ports from a base, as `npm start` has them (3100+), below the kernel's ephemeral range (32768+): a port
  // there can be the local end of any process's outgoing connection at that moment, and a service that cannot listen
  // on its health port never becomes ready (this suite failed that way now and then: gateway, analytics).
  const healthPortBase = 20_000 + Math.floor(Math.random() * 12_000);
  dev = await startDevStack({
    localDir,
    gatewayPort,
    analyticsPort,
    chatappFakePort,
    healthPortBase,
    logLevel: 'warn',
  });
}, 240_000);
afterAll(async () => {
  await dev?.stop();
  rmSync(localDir, { recursive: true, force: true });
});

/** The first link of a page whose text contains `label`. */
function link(page: string, label: string): string {
  const m = new RegExp(`<a [^>]*href="([^"]+)"[^>]*>[^<]*${label}`).exec(page);
  if (!m) throw new Error(`no link "${label}" in ${page}`);
  return m[1]!.replace(/&#38;/g, '&');
}

test('when the local stack is up, then every process answers /healthz, /readyz and /metrics on its own health port', async () => {
  expect(dev.urls.health.map((h) => h.name).sort()).toEqual([...SERVICE_NAMES].sort());
  for (const { name, url } of dev.urls.health) {
    expect({
      name,
      healthz: (await fetch(`${url}/healthz`)).status,
      readyz: (await fetch(`${url}/readyz`)).status,
    }).toEqual({ name, healthz: 200, readyz: 200 });
    const metrics = await fetch(`${url}/metrics`);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await metrics.text()).toMatch(/^# (HELP|TYPE) /m);
  }
});

test('when a developer installs the chat app in the local workspace, routes a channel to an agent and links a chat user, then each step works on the local stack', async () => {
  const admin = client(dev.urls.gateway, dev.adminToken);
  const tenantId = `acme-${Date.now().toString(36)}`;
  const p = { tenantId, projectId: 'demo' };
  await aStoredAgent(admin, p, { id: 'support-bot', name: 'Support bot' });

  // 1. install: the gateway sends the browser to the chat product, which asks which workspace to allow
  const install = await fetch(await anInstallLink(dev.urls.gateway, dev.adminToken, { tenantId, projectId: 'demo' }), {
    redirect: 'manual',
  });
  expect(install.status).toBe(302);
  const authorize = await fetch(install.headers.get('location')!, { redirect: 'manual' });
  expect(authorize.status).toBe(200);
  const allow = new URL(link(await authorize.text(), 'Allow in Local Workspace'), dev.urls.chatapp);
  const approved = await fetch(allow, { redirect: 'manual' });
  expect(approved.status).toBe(302);
  const callback = await fetch(approved.headers.get('location')!, { redirect: 'manual' });
  expect(callback.status).toBe(302);
  const result = new URL(callback.headers.get('location')!);
  expect(`${result.origin}${result.pathname}`).toBe(`${dev.urls.chatapp}/local/result`);
  expect(Object.fromEntries(result.searchParams)).toMatchObject({
    success: 'true',
    workspace: 'Local Workspace',
    teamId: 'TLOCAL0001',
    tenant_id: tenantId,
  });
  const resultPage = await fetch(result);
  expect(resultPage.status).toBe(200);
  expect(await resultPage.text()).toContain('/work-apps/chatapp/workspaces/TLOCAL0001/channels/CSUPPORT01/settings');

  // 2. channel routing: #support answers with an agent; a test message lands in the channel
  const ws = '/work-apps/chatapp/workspaces/TLOCAL0001';
  const set = await admin.put(`${ws}/channels/CSUPPORT01/settings`, {
    agentConfig: { agentId: 'support-bot', projectId: 'demo' },
  });
  expect(set.status).toBe(200);
  const channels = await admin.get(`${ws}/channels`);
  expect(channels.status).toBe(200);
  expect(channels.body.channels.find((c: { id: string }) => c.id === 'CSUPPORT01')).toMatchObject({
    name: 'support',
    hasAgentConfig: true,
    agentConfig: { agentId: 'support-bot', projectId: 'demo' },
  });
  const sent = await admin.post(`${ws}/test-message`, { channelId: 'CSUPPORT01', message: `hello from ${tenantId}` });
  expect(sent.body).toMatchObject({ success: true, error: null });
  expect(await (await fetch(dev.urls.chatapp)).text()).toContain(`hello from ${tenantId}`);

  // 3. user linking: the platform user asks to connect; the chat user (played on the fake's page) completes it
  const connect = await admin.post('/work-apps/chatapp/users/connect', { userId: 'local-user', tenantId });
  expect(connect.status).toBe(200);
  const connectPage = await fetch(connect.body.connectUrl);
  expect(connectPage.status).toBe(200);
  expect(await connectPage.text()).toContain(connect.body.sessionToken);
  const form = new URLSearchParams({
    session: connect.body.sessionToken,
    team: 'TLOCAL0001',
    user: 'ULOCAL0001',
    username: 'local.user',
  });
  const linked = await http('POST', `${dev.urls.chatapp}/app_redirect`, {
    raw: form.toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  expect(linked.status).toBe(200);
  expect(linked.body).toContain('linkId');
  const status = await admin.get(`/work-apps/chatapp/users/status?userId=local-user&tenantId=${tenantId}`);
  expect(status.body).toMatchObject({
    connected: true,
    connection: { appUserId: 'local-user', chatappTeamId: 'TLOCAL0001', chatappUserId: 'ULOCAL0001', tenantId },
  });
});
