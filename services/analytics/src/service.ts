import { defineService } from '@platform/runtime';
import { startAuditLog } from '@platform/audit';
import { publishNotice, startErasureWorker } from '@platform/bus';
import { eraseProjectDocuments } from '@platform/mongo';
import { credentialRevoked, type CredentialRevoked } from '@platform/contracts';
import { analyticsConfig } from './config';
import { analyticsKeyRepo } from './data/analytics-key.repo';
import { analyticsEventRepo } from './data/analytics-event.repo';
import { registerAnalyticsKeyHandlers } from './handlers/analytics-keys';
import { registerAnalyticsEventHandlers } from './handlers/analytics-events';

/** Analytics ingest (`POST {analytics_url}/events`), its keys, and counts of what was ingested. */
export const analytics = defineService({
  name: 'analytics',
  config: analyticsConfig,
  async start({ config, bus, db, outbox, nc }) {
    const keys = analyticsKeyRepo(db);
    const events = analyticsEventRepo(db, outbox);
    await Promise.all([keys.model.init(), events.model.init()]);
    // Changes of analytics keys are audited here and copied into the tenant's log by management (event ingest is not).
    const audit = await startAuditLog({ bus, db, outbox, settleSeconds: config.AUDIT_PENDING_SETTLE_SECONDS });
    const announceRevoked = (r: CredentialRevoked) => publishNotice(nc, credentialRevoked, r);
    registerAnalyticsKeyHandlers(bus, { keys, pepper: config.TOKEN_PEPPER, announceRevoked });
    registerAnalyticsEventHandlers(bus, { events });
    const erasure = await startErasureWorker(nc, bus, 'analytics', {
      eraseProject: (scope) => eraseProjectDocuments(db, scope),
      eraseConversation: (scope, conversationId) => events.model.deleteMany({ ...scope, conversationId }),
    });
    return {
      async stop() {
        await erasure.stop();
        await audit.stop();
      },
    };
  },
});
