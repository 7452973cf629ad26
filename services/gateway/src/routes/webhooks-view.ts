import type { Express } from 'express';
import { WEBHOOKS_VIEW_CSS, WEBHOOKS_VIEW_HTML, WEBHOOKS_VIEW_JS } from '../views/webhooks-view.page';
import { sendView } from './analytics-view';

/**
 * `GET /webhooks/view?tenantId&projectId[&destinationId&status&eventType&runEventId]` and its assets (an addition): destinations
 * with their statistics, a destination's delivery log, redeliver and recover, all through the management API with the
 * session cookie (like the analytics view).
 */
export function mountWebhooksView(app: Express): void {
  app.get('/webhooks/view', (_req, res) => sendView(res, 'text/html; charset=utf-8', WEBHOOKS_VIEW_HTML, 'no-store'));
  app.get('/webhooks/assets/view.js', (_req, res) =>
    sendView(res, 'text/javascript; charset=utf-8', WEBHOOKS_VIEW_JS, 'no-cache'),
  );
  app.get('/webhooks/assets/view.css', (_req, res) =>
    sendView(res, 'text/css; charset=utf-8', WEBHOOKS_VIEW_CSS, 'no-cache'),
  );
}
