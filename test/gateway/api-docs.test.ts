import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { allOperations } from '@platform/contracts';
import { repoRoot, testStack } from '@platform/testkit';
import { useBrowser } from '../support/browser';

const stack = testStack();

const browser = useBrowser();

/** The few browser globals the page functions below use (the test project compiles without the DOM lib). */
interface PageElements {
  length: number;
  [index: number]: PageElement;
  forEach(fn: (el: PageElement) => void): void;
}
interface PageElement {
  id: string;
  textContent: string | null;
  getAttribute(name: string): string | null;
  getBoundingClientRect(): { top: number; bottom: number };
  querySelectorAll(selector: string): PageElements;
}
interface PageWindow {
  scrollY: number;
  innerHeight: number;
  scrollTo(x: number, y: number): void;
  scrollBy(x: number, y: number): void;
  requestAnimationFrame(callback: () => void): number;
  document: {
    documentElement: { scrollHeight: number };
    querySelector(selector: string): PageElement | null;
    querySelectorAll(selector: string): PageElements;
  };
}

describe('API reference at /docs', () => {
  test('when /docs is opened in a browser, then the operations of the OpenAPI document are listed, rendered from assets the gateway serves itself', async () => {
    const page = await browser().newPage({ viewport: { width: 1280, height: 900 } });
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
    // Swagger UI (5.3x) virtualizes the operation list once it has 150 rows or more (tags + operations):
    // only the rows near the viewport are in the DOM, the rest render as the reader scrolls. So scroll
    // through the whole page, the way a reader would, and collect what was shown on the way.
    const shown = await page.evaluate(async () => {
      const window = globalThis as unknown as PageWindow;
      const document = window.document;
      // Whether the rows in view are rendered: the virtual list's first rendered row starts at or above the top of the
      // part of the list in view, its last ends at or below the bottom (a list not virtualized has every row).
      const covered = () => {
        const list = document.querySelector('.operations-virtual__list');
        if (!list) return true;
        const items = list.querySelectorAll('.operations-virtual__item');
        if (!items.length) return false;
        const l = list.getBoundingClientRect();
        const top = Math.max(0, l.top);
        const bottom = Math.min(window.innerHeight, l.bottom);
        if (bottom <= top) return true;
        const first = items[0]!.getBoundingClientRect();
        const last = items[items.length - 1]!.getBoundingClientRect();
        return first.top <= top + 1 && last.bottom >= bottom - 1;
      };
      // After a scroll, frame by frame until the virtualizer has rendered the rows in view.
      const settle = async () => {
        do await new Promise<void>((done) => window.requestAnimationFrame(() => done()));
        while (!covered());
      };
      const ids = new Set<string>();
      const paths = new Set<string>();
      const collect = () => {
        document.querySelectorAll('.opblock').forEach((el) => {
          ids.add(el.id);
        });
        document.querySelectorAll('.opblock-summary-path').forEach((el) => {
          paths.add(el.getAttribute('data-path') ?? el.textContent ?? '');
        });
      };
      window.scrollTo(0, 0);
      await settle();
      collect();
      for (
        let step = 0;
        step < 2000 && window.scrollY + window.innerHeight < document.documentElement.scrollHeight - 1;
        step++
      ) {
        window.scrollBy(0, Math.floor(window.innerHeight / 2));
        await settle();
        collect();
      }
      window.scrollTo(0, 0);
      await settle();
      return { ids: [...ids], paths: [...paths] };
    });

    // Every operation appears, by its operationId (Swagger UI ids end with `-<operationId>`).
    expect(
      allOperations
        .filter((op) => !shown.ids.some((id) => id.endsWith(`-${op.operationId}`)))
        .map((op) => op.operationId),
    ).toEqual([]);
    expect(await page.textContent('.info .title')).toContain('Agent Platform API');
    expect(shown.paths).toContain('/manage/tenants/{tenantId}/projects/{projectId}/api-keys');

    // No CDN: every request stays on the gateway.
    expect(requests.filter((u) => !u.startsWith(stack.gatewayUrl))).toEqual([]);
    expect(requests).toEqual(
      expect.arrayContaining([
        `${stack.gatewayUrl}/openapi.json`,
        `${stack.gatewayUrl}/docs/assets/swagger-ui-bundle.js`,
      ]),
    );
    expect(errors).toEqual([]);

    const dir = join(repoRoot, '.infra', 'screenshots');
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'api-docs.png');
    await page.screenshot({ path: file, fullPage: false });
    expect(existsSync(file)).toBe(true);
    await page.close();
  });
});
