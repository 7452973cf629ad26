import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { anAnalyticsKey, aProject, client, projectPath, repoRoot } from '@platform/testkit';
import { admin, stack } from '../support/stack';
import { expectSignInAsked, fetchStrictPage, signedInContext, useBrowser } from '../support/browser';

const browser = useBrowser();

interface ChartData {
  labels: string[];
  datasets: Array<{ label: string; data: number[] }>;
}

describe('analytics view', () => {
  test('when a signed-in user opens the view, then the chart shows the counts the API returns, per type and per entityType', async () => {
    const p = aProject();
    const { key } = await anAnalyticsKey(admin, p);
    const ingest = client(stack.analyticsUrl, key);
    const events = [
      { entityType: 'message', messageId: 'm-1', type: 'message.copied', createdAt: '2026-02-20T09:10:00Z' },
      { entityType: 'message', messageId: 'm-2', type: 'message.copied', createdAt: '2026-02-20T09:40:00Z' },
      { entityType: 'message', messageId: 'm-2', type: 'message.rated', createdAt: '2026-02-20T11:05:00Z' },
      {
        entityType: 'conversation',
        conversationId: 'c-1',
        type: 'conversation.opened',
        createdAt: '2026-02-20T10:00:00Z',
      },
      { entityType: 'search', searchQuery: 'pricing', type: 'search.performed', createdAt: '2026-02-20T11:30:00Z' },
      { entityType: 'search', searchQuery: 'refunds', type: 'search.performed', createdAt: '2026-02-20T11:31:00Z' },
    ];
    for (const e of events) expect((await ingest.post('/events', e)).status).toBe(201);
    const range = 'from=2026-02-20T08:00:00Z&to=2026-02-20T12:00:00Z&bucket=hour';
    const api = await admin.get(`${projectPath(p)}/analytics/counts?${range}`);
    expect(api.status).toBe(200);
    expect(api.body.data.total).toBe(6);

    const context = await signedInContext(browser(), stack);
    const page = await context.newPage();
    const failed: string[] = [];
    page.on('requestfailed', (r) => failed.push(r.url()));
    const chartJs = page.waitForResponse((r) => r.url().endsWith('/analytics/assets/chart.umd.min.js'));
    await page.goto(`${stack.gatewayUrl}/analytics/view?tenantId=${p.tenantId}&projectId=${p.projectId}&${range}`);
    expect((await chartJs).status()).toBe(200);
    await page.waitForSelector('#analytics[data-state="ready"]');

    const readChart = () =>
      page.evaluate(() => {
        const chart = (
          globalThis as unknown as { Chart: { getChart(id: string): { data: ChartData } } }
        ).Chart.getChart('chart');
        return {
          labels: chart.data.labels,
          datasets: chart.data.datasets.map((d) => ({ label: d.label, data: d.data })),
        };
      });
    const byType = await readChart();
    expect(byType.labels).toEqual(api.body.data.buckets);
    expect(byType.datasets).toEqual(
      api.body.data.byType.map((s: { type: string; counts: number[] }) => ({ label: s.type, data: s.counts })),
    );
    expect(await page.getAttribute('#analytics', 'data-total')).toBe('6');
    await expect(page.textContent('#status')).resolves.toContain('6 event(s)');
    mkdirSync(join(repoRoot, '.infra'), { recursive: true });
    await page.screenshot({ path: join(repoRoot, '.infra', 'analytics-view.png'), fullPage: true });

    // Switching the grouping reloads with the entityType series.
    await page.selectOption('#groupBy', 'entityType');
    await page.waitForURL(/groupBy=entityType/);
    await page.waitForSelector('#analytics[data-state="ready"]');
    const byEntity = await readChart();
    expect(byEntity.labels).toEqual(api.body.data.buckets);
    expect(byEntity.datasets).toEqual(
      api.body.data.byEntityType.map((s: { entityType: string; counts: number[] }) => ({
        label: s.entityType,
        data: s.counts,
      })),
    );
    expect(byEntity.datasets.map((d) => d.label)).toEqual(['message', 'conversation', 'search']);
    expect(failed).toEqual([]);
    await context.close();
  });

  test('when the visitor is not signed in, then the page says so instead of drawing a chart', async () => {
    const p = aProject();
    await expectSignInAsked(
      browser(),
      `${stack.gatewayUrl}/analytics/view?tenantId=${p.tenantId}&projectId=${p.projectId}`,
      '#analytics',
    );
  });

  test('when the page and its script are fetched, then they are served with a strict content security policy and no CDN', async () => {
    await fetchStrictPage(`${stack.gatewayUrl}/analytics/view`, /default-src 'none'; script-src 'self'/);
    const lib = await fetch(`${stack.gatewayUrl}/analytics/assets/chart.umd.min.js`);
    expect(lib.status).toBe(200);
    expect(lib.headers.get('content-type')).toMatch(/javascript/);
    expect(await lib.text()).toMatch(/Chart\.js v4/);
  });
});
