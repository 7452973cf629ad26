import { defineService, instanceId } from '@platform/runtime';
import { outboxRelay, type OutboxRelay } from '@platform/outbox';
import { keyedHash, SecretBox } from '@platform/secrets';
import { encode } from '@platform/bus';
import { APP_CHANGED_SUBJECT, CREDENTIAL_REVOKED_SUBJECT, type CredentialRevoked } from '@platform/contracts';
import { managementConfig } from './config';
import { apiKeyModel } from './data/api-key.model';
import { apiKeyRepo } from './data/api-key.repo';
import { appEventModel } from './data/app.model';
import { webhookDestinationModel } from './data/webhook-destination.model';
import { webhookDestinationRepo } from './data/webhook-destination.repo';
import { sessionStore } from './data/session.store';
import { registerApiKeyHandlers } from './handlers/api-keys';
import { registerWebhookDestinationHandlers } from './handlers/webhook-destinations';
import { registerAccessHandlers } from './handlers/access';
import { registerSystemHandlers } from './handlers/system';
import { startAgentResources } from './agent-resources';
import { startCredentialsTriggersFeedback } from './credentials-triggers-feedback';
import { appRepo } from './data/app.repo';
import { registerAppHandlers } from './handlers/apps';

export const management = defineService({
  name: 'management',
  config: managementConfig,
  uses: { mongo: true, redis: true },
  async start({ config, bus, pub, db, redis, nc }) {
    const announceRevoked = (r: CredentialRevoked) => nc.publish(CREDENTIAL_REVOKED_SUBJECT, encode(r));
    const apiKeyRelay = outboxRelay(apiKeyModel(db), pub);
    const destinationRelay = outboxRelay(webhookDestinationModel(db), pub);
    const appRelay = outboxRelay(appEventModel(db), pub);
    const relays: OutboxRelay[] = [apiKeyRelay, destinationRelay, appRelay];
    const apiKeys = apiKeyRepo(db, apiKeyRelay);
    const destinations = webhookDestinationRepo(db, destinationRelay);
    const apps = appRepo(db, appRelay);
    await apiKeys.backfillLive();
    await apps.sweepHeld();
    const heldSweep = setInterval(() => void apps.sweepHeld().catch(() => undefined), 30_000);
    heldSweep.unref();
    await Promise.all(relays.map((r) => r.sweep()));
    relays.push(...(await startAgentResources(bus, db, redis, pub)));

    const cookieName = `${config.SESSION_COOKIE_PREFIX}.session_token`;
    registerSystemHandlers(bus, instanceId);
    registerApiKeyHandlers(bus, { apiKeys, pepper: config.TOKEN_PEPPER, announceRevoked });
    registerWebhookDestinationHandlers(bus, {
      destinations,
      box: new SecretBox(config.ENCRYPTION_KEY),
      allowLoopback: config.ALLOW_LOOPBACK_WEBHOOKS === 'true',
      secretGraceSeconds: config.WEBHOOK_SECRET_GRACE_SECONDS,
    });
    relays.push(...(await startCredentialsTriggersFeedback(bus, db, pub, config)));
    registerAppHandlers(bus, { apps, announceChanged: (change) => nc.publish(APP_CHANGED_SUBJECT, encode(change)) });
    registerAccessHandlers(
      bus,
      {
        db,
        sessions: sessionStore(redis),
        adminToken: config.ADMIN_TOKEN,
        pepper: config.TOKEN_PEPPER,
        sessionTtlSeconds: config.SESSION_TTL_SECONDS,
        playgroundKey: config.PLAYGROUND_SIGNING_KEY ?? keyedHash(config.TOKEN_PEPPER, 'playground-signing-key'),
        playgroundTtlSeconds: config.PLAYGROUND_TOKEN_TTL_SECONDS,
        announceRevoked,
      },
      cookieName,
    );
    return {
      async stop() {
        clearInterval(heldSweep);
        await Promise.all(relays.map((r) => r.stop()));
      },
    };
  },
});
