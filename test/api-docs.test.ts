import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { allOperations } from '@platform/contracts';
import { repoRoot, testStack } from '@platform/testkit';

const stack = testStack();
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM}: scripts/test.sh installs it (apt-get install -y chromium)`);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});
afterAll(async () => {
  await browser?.close();
});

describe('API reference at /docs', () => {
  test('when /docs is opened in a browser, then the operations of the OpenAPI document are listed, rendered from assets the gateway serves itself', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const requests: string[] = [];
    const errors: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('response', (r) => {
      if (r.status() >= 400) errors.push(`${r.status()} ${r.url()}`);
    });
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    const res = await page.goto(`${stack.gatewayUrl}/docs`);
    expect(res?.status()).toBe(200);
    expect(res?.headers()['content-type']).toMatch(/text\/html/);
    await page.waitForSelector('#api-docs[data-state="ready"]', { timeout: 30_000 });
    await page.waitForSelector('.opblock');
    // Large documents render in more than one pass: wait until the blocks stop appearing.
    await page.waitForFunction((n) => (globalThis as unknown as { document: { querySelectorAll(s: string): { length: number } } }).document.querySelectorAll('.opblock').length >= n, allOperations.length, { timeout: 30_000 }).catch(() => undefined);

    const listed = await page.$$eval('.opblock', (els) => els.map((el) => el.id));
    // Every operation appears once, by its operationId (Swagger UI ids end with `-<operationId>`).
    expect(allOperations.filter((op) => !listed.some((id) => id.endsWith(`-${op.operationId}`))).map((op) => op.operationId)).toEqual([]);
    expect(await page.textContent('.info .title')).toContain('Agent Platform API');
    const paths = await page.$$eval('.opblock-summary-path', (els) => els.map((el) => el.getAttribute('data-path') ?? el.textContent ?? ''));
    expect(paths).toContain('/manage/tenants/{tenantId}/projects/{projectId}/api-keys');

    // No CDN: every request stays on the gateway.
    expect(requests.filter((u) => !u.startsWith(stack.gatewayUrl))).toEqual([]);
    expect(requests).toEqual(expect.arrayContaining([`${stack.gatewayUrl}/openapi.json`, `${stack.gatewayUrl}/docs/assets/swagger-ui-bundle.js`]));
    expect(errors).toEqual([]);

    const dir = join(repoRoot, '.infra', 'screenshots');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'api-docs.png');
    await page.screenshot({ path: file, fullPage: false });
    expect(existsSync(file)).toBe(true);
    await page.close();
  });
});
