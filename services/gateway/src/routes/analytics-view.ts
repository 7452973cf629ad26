import type { Express, Response } from 'express';
import { AppError } from '@platform/problems';
import { getLogger } from '@platform/logger';
import { sendStatic, vendoredFile } from './static-files';
import { ANALYTICS_VIEW_CSS, ANALYTICS_VIEW_HTML, ANALYTICS_VIEW_JS } from '../views/analytics-view.page';

const log = getLogger('gateway.analytics-view');
const CHART_FILE = 'chart.umd.min.js';

/** The views' content security policy: scripts and styles from this origin only, no inline code, no forms posting away. */
export const VIEW_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** Sends a view or one of its assets with the views' CSP. */
export function sendView(res: Response, type: string, body: string | Buffer, cache: string) {
  sendStatic(res, VIEW_CSP, type, body, cache);
}

/** `GET /analytics/view?tenantId&projectId[&from&to&bucket&groupBy]` and its static assets (an addition). */
export function mountAnalyticsView(app: Express): void {
  // Chart.js's UMD build, read once at start.
  const chartJs = vendoredFile('chart.js', CHART_FILE, log, 'the analytics view cannot draw charts');
  app.get('/analytics/view', (_req, res) => sendView(res, 'text/html; charset=utf-8', ANALYTICS_VIEW_HTML, 'no-store'));
  app.get('/analytics/assets/view.js', (_req, res) =>
    sendView(res, 'text/javascript; charset=utf-8', ANALYTICS_VIEW_JS, 'no-cache'),
  );
  app.get('/analytics/assets/view.css', (_req, res) =>
    sendView(res, 'text/css; charset=utf-8', ANALYTICS_VIEW_CSS, 'no-cache'),
  );
  app.get(`/analytics/assets/${CHART_FILE}`, (_req, res, next) => {
    if (!chartJs)
      return next(new AppError('service_unavailable', 'The chart library is not installed on this gateway'));
    sendView(res, 'text/javascript; charset=utf-8', chartJs, 'public, max-age=86400');
  });
}
