import { anAnalyticsKey, anApiKey, anApp, aProject, http, projectPath, rowsOfTenant } from '@platform/testkit';
import { admin, stack } from '../support/stack';

/** The secret and its long pieces (the part after a `sk_`/`whsec_`/`ak_` prefix or a `.` separator). */
function needles(secret: string): string[] {
  return [secret, ...secret.split(/[._]/).filter((piece) => piece.length >= 16)];
}

test('when API keys, webhook secrets, stored credential values, access tokens, a playground key and an analytics key are created, then the raw database holds none of them in plaintext', async () => {
  const p = aProject();
  const P = projectPath(p);
  const secrets: Record<string, string> = {};

  secrets.apiKey = (await anApiKey(admin, p)).key;
  const wh = await admin.post(`${P}/webhook-destinations`, {
    name: 'hook',
    url: 'https://hooks.example.com/a',
    eventTypes: ['conversation.tool.error'],
  });
  expect(wh.status).toBe(201);
  secrets.webhookSecret = wh.body.data.secret;
  const rotated = await admin.post(`${P}/webhook-destinations/${wh.body.data.id}/rotate-secret`, {});
  expect(rotated.status).toBe(200);
  secrets.rotatedWebhookSecret = rotated.body.data.secret;
  secrets.credentialValue = `cred-value-${Date.now()}-0123456789abcdef`;
  secrets.credentialHeader = `header-secret-${Date.now()}-0123456789abcdef`;
  const stored = await admin.post(`${P}/credential-stores/memory-default/credentials`, {
    key: 'gh',
    value: secrets.credentialValue,
    metadata: { 'X-Api-Key': secrets.credentialHeader },
  });
  expect(stored.status).toBe(201);
  const token = await admin.post(`/manage/tenants/${p.tenantId}/access-tokens`, { name: 'ci', role: 'admin' });
  secrets.accessToken = token.body.data.token;
  const app = await anApp(admin, p);
  const session = await http('POST', `${stack.gatewayUrl}/manage/auth/session`, { token: secrets.accessToken });
  expect(session.status).toBe(201);
  const cookie = (session.headers.get('set-cookie') ?? '').split(';')[0]!;
  secrets.sessionCookie = decodeURIComponent(cookie.slice(cookie.indexOf('=') + 1));
  const playground = await http('POST', `${stack.gatewayUrl}/manage/tenants/${p.tenantId}/playground/token`, {
    cookie,
    json: { projectId: p.projectId, agentId: 'agent-1' },
  });
  expect(playground.status).toBe(200);
  secrets.playgroundKey = playground.body.apiKey;
  secrets.analyticsKey = (await anAnalyticsKey(admin, p)).key;
  expect(app.id).toBeTruthy();

  for (const [what, value] of Object.entries(secrets))
    expect([what, typeof value, value.length >= 16]).toEqual([what, 'string', true]);

  const rows = await rowsOfTenant(stack.env.MONGO_URL!, stack.env.MONGO_DB_PREFIX ?? 'test', p.tenantId);
  // The records are there (so the search below looked at them) ...
  expect(Object.keys(rows).length).toBeGreaterThanOrEqual(5);
  const raw = JSON.stringify(rows);
  // ... and no secret appears in them, whole or in part.
  const found = Object.entries(secrets).filter(([, value]) => needles(value).some((n) => raw.includes(n)));
  expect(found.map(([what]) => what)).toEqual([]);
}, 300_000);
