import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { adminClient, anApiKey, aProject, client, projectPath, startReceiver, testStack, type Receiver } from '@platform/testkit';

/**
 * Receivers that misbehave (never answer, trickle their answer, answer with an endless body) must not stall the
 * deliveries to everybody else.
 */
const stack = testStack();
const admin = adminClient(stack);
let good: Receiver;
let bad: http.Server;
let badUrl = '';

beforeAll(async () => {
  good = await startReceiver();
  bad = http.createServer((req, res) => {
    if (req.url === '/hang') return; // never answers
    if (req.url === '/slow') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const t = setInterval(() => res.write('.'), 1000);
      res.on('close', () => clearInterval(t));
      return;
    }
    // /huge: an endless body
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const pump = () => {
      while (res.write(chunk)) {
        /* keep writing until the socket pushes back */
      }
    };
    res.on('drain', pump);
    pump();
  });
  await new Promise<void>((r) => bad.listen(0, '127.0.0.1', r));
  badUrl = `http://127.0.0.1:${(bad.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await good?.close();
  bad?.closeAllConnections();
  await new Promise<void>((r) => bad.close(() => r()));
});

test('when receivers hang, trickle their answer or send an endless body, then deliveries to a healthy receiver still arrive in full', async () => {
  const p = aProject();
  const P = projectPath(p);
  for (const path of ['hang', 'slow', 'huge']) {
    expect((await admin.post(`${P}/webhook-destinations`, { name: path, url: `${badUrl}/${path}`, eventTypes: ['event.created'] })).status).toBe(201);
  }
  expect((await admin.post(`${P}/webhook-destinations`, { name: 'good', url: good.url, eventTypes: ['event.created'] })).status).toBe(201);
  const { key } = await anApiKey(admin, p);
  const run = client(stack.gatewayUrl, key);
  const N = 40;
  for (let i = 0; i < N; i++) expect((await run.post('/run/v1/events', { id: `lim-${i}`, type: 'limits.tested' })).status).toBe(201);
  const ours = (r: { json?: any }) => r.json?.tenantId === p.tenantId;
  await good.waitFor(ours, N, 60_000);
  expect(new Set(good.received.filter(ours).map((r) => r.json.data.event.id)).size).toBe(N);
}, 120_000);
