import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  aProject,
  anApiKey,
  client,
  eventually,
  projectPath,
  repoRoot,
  startReceiver,
  type Receiver,
} from '@platform/testkit';
import { admin, stack } from '../support/stack';
import { expectSignInAsked, fetchStrictPage, signedInContext, useBrowser } from '../support/browser';
import { createDestination, eventuallyLogged } from '../support/webhooks';

/** Screenshots for docs/webhooks.md (copied from here by hand when the page changes). */
const SHOTS = join(repoRoot, '.infra', 'screenshots');

const browser = useBrowser();
const receivers: Receiver[] = [];

beforeAll(() => {
  mkdirSync(SHOTS, { recursive: true });
});
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
});

async function statsShow(
  p: { tenantId: string; projectId: string },
  destId: string,
  counts: { delivered: number; failed: number },
) {
  await eventually(
    async () => {
      const res = await admin.get(`${projectPath(p)}/webhook-destinations/${destId}/stats`);
      const c = res.body.data.lastHour.counts;
      return c.delivered === counts.delivered && c.failed === counts.failed ? true : undefined;
    },
    'the counters written',
    20_000,
    200,
  );
}

describe('webhooks view', () => {
  test('when a signed-in user redelivers a failed delivery from the page, then the receiver gets it and the page shows it delivered', async () => {
    const receiver = await startReceiver();
    receivers.push(receiver);
    const p = aProject();
    const { key } = await anApiKey(admin, p, { agentId: 'agent-a' });
    const dest = await createDestination(admin, p, {
      name: 'orders receiver',
      url: receiver.url,
      eventTypes: ['event.created'],
    });
    await createDestination(admin, p, {
      name: 'alerts',
      url: 'https://hooks.example.com/alerts',
      eventTypes: ['evaluation.failed'],
    });
    receiver.respondWith(400, 200);
    const run = client(stack.gatewayUrl, key);
    expect((await run.post('/run/v1/events', { id: 'evt-view-1', type: 'page.viewed' })).status).toBe(201);
    const failed = await eventuallyLogged(admin, p, dest.id, (d) => d.status === 'failed', 'the first delivery failed');
    expect((await run.post('/run/v1/events', { id: 'evt-view-2', type: 'page.viewed' })).status).toBe(201);
    await eventuallyLogged(admin, p, dest.id, (d) => d.status === 'delivered', 'the second delivered');

    // The counters are written every few seconds: the page shows what they say when it loads.
    await statsShow(p, dest.id, { delivered: 1, failed: 1 });
    const context = await signedInContext(browser(), stack, { viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const failedRequests: string[] = [];
    const consoleErrors: string[] = [];
    page.on('requestfailed', (r) => failedRequests.push(r.url()));
    page.on('response', (r) => {
      if (r.status() >= 400) failedRequests.push(`${r.status()} ${r.url()}`);
    });
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    await page.goto(`${stack.gatewayUrl}/webhooks/view?tenantId=${p.tenantId}&projectId=${p.projectId}`);
    await page.waitForSelector('#webhooks[data-state="ready"]');
    await expect(page.textContent('#status')).resolves.toContain('2 destination(s)');
    const row = page.locator(`#destinations tr[data-destination-id="${dest.id}"]`);
    await expect(row.textContent()).resolves.toContain('orders receiver');

    await row.click();
    const failedRow = page.locator(`tr.delivery[data-delivery-id="${failed.id}"]`);
    await page.locator(`tr.delivery[data-delivery-id="${failed.id}"][data-status="failed"]`).waitFor();
    await expect(failedRow.textContent()).resolves.toContain('400');
    await page.locator('#destinations tr[aria-selected="true"]', { hasText: '1 delivered, 1 failed' }).waitFor();
    await failedRow.locator('details summary').click();
    await page.screenshot({ path: join(SHOTS, 'webhooks-view-failed.png'), fullPage: true });

    // The status filter shows only the failed one.
    await page.selectOption('#filter-status', 'failed');
    await page.locator('tr.delivery').nth(1).waitFor({ state: 'detached' });
    await expect(page.locator('tr.delivery').count()).resolves.toBe(1);
    await page.waitForURL(/status=failed/);
    await page.selectOption('#filter-status', '');
    await page.locator('tr.delivery').nth(1).waitFor();

    // Each delivery shows the id of the run event it carries, and the log can be narrowed to one run event.
    await expect(failedRow.textContent()).resolves.toContain('evt-view-1');
    await page.fill('#filter-run-event', 'evt-view-2');
    await page.dispatchEvent('#filter-run-event', 'change');
    await failedRow.waitFor({ state: 'detached' });
    await expect(page.locator('tr.delivery').count()).resolves.toBe(1);
    await expect(page.locator('tr.delivery').textContent()).resolves.toContain('evt-view-2');
    await page.waitForURL(/runEventId=evt-view-2/);
    await page.fill('#filter-run-event', '');
    await page.dispatchEvent('#filter-run-event', 'change');
    await page.locator('tr.delivery').nth(1).waitFor();

    await failedRow.locator('button.redeliver').click();
    const [again] = await receiver.waitFor((r) => r.headers['webhook-id'] === failed.id, 2).then((rs) => rs.slice(1));
    expect(again!.headers['webhook-id']).toBe(failed.id);
    await page
      .locator(`tr.delivery[data-delivery-id="${failed.id}"][data-status="delivered"]`)
      .waitFor({ timeout: 20_000 })
      .catch(async (err: Error) => {
        // What the page and the API showed instead, to tell a page that stopped refreshing from a delivery not recorded.
        const shown = await page
          .getAttribute(`tr.delivery[data-delivery-id="${failed.id}"]`, 'data-status')
          .catch(() => 'no row');
        const api = await admin.get(`${projectPath(p)}/webhook-destinations/${dest.id}/deliveries?limit=50`);
        throw new Error(
          `${err.message}; page: status ${shown}, "${await page.textContent('#log-status')}", state ${await page.getAttribute('#webhooks', 'data-state')}; API: ${api.status} ${JSON.stringify(api.body)}`,
        );
      });
    const attempts = page.locator(`tr.delivery[data-delivery-id="${failed.id}"] tr.attempt`);
    await expect(attempts.count()).resolves.toBe(2);
    await expect(
      page.getAttribute(`tr.delivery[data-delivery-id="${failed.id}"] tr.attempt[data-attempt="2"]`, 'data-manual'),
    ).resolves.toBe('true');
    await statsShow(p, dest.id, { delivered: 2, failed: 0 });
    await page.reload();
    await page.locator(`tr.delivery[data-delivery-id="${failed.id}"][data-status="delivered"]`).waitFor();
    await page.locator('#destinations tr[aria-selected="true"]', { hasText: '2 delivered, 0 failed' }).waitFor();
    await page.locator(`tr.delivery[data-delivery-id="${failed.id}"] details summary`).click();
    await page.screenshot({ path: join(SHOTS, 'webhooks-view-redelivered.png'), fullPage: true });
    expect(failedRequests).toEqual([]);
    expect(consoleErrors).toEqual([]);
    await context.close();
  });

  test('when the visitor is not signed in, then the page says so', async () => {
    const p = aProject();
    await expectSignInAsked(
      browser(),
      `${stack.gatewayUrl}/webhooks/view?tenantId=${p.tenantId}&projectId=${p.projectId}`,
      '#webhooks',
    );
  });

  test('when the page and its assets are fetched, then they carry a strict content security policy and no inline script', async () => {
    const html = await fetchStrictPage(
      `${stack.gatewayUrl}/webhooks/view`,
      /default-src 'none'; script-src 'self'; style-src 'self'/,
    );
    // Every script has a src (none inline), and no element has an inline event handler or style.
    expect(html.match(/<script[^>]*>/g)).toEqual(['<script src="/webhooks/assets/view.js" defer>']);
    expect(html).not.toMatch(/\son[a-z]+=|\sstyle=/i);
    for (const [asset, type] of [
      ['view.js', /javascript/],
      ['view.css', /text\/css/],
    ] as const) {
      const res = await fetch(`${stack.gatewayUrl}/webhooks/assets/${asset}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(type);
      expect(res.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
    }
  });
});
