import { defineService, instanceId } from '@platform/runtime';
import { outboxRelay, type OutboxRelay } from '@platform/mongo';
import { keyedHash } from '@platform/secrets';
import { encode } from '@platform/bus';
import { CREDENTIAL_REVOKED_SUBJECT, type CredentialRevoked } from '@platform/contracts';
import { managementConfig } from './config';
import { apiKeyRepo } from './data/api-key.repo';
import { webhookDestinationRepo } from './data/webhook-destination.repo';
import { sessionStore } from './data/session.store';
import { registerApiKeyHandlers } from './handlers/api-keys';
import { registerWebhookDestinationHandlers } from './handlers/webhook-destinations';
import { registerAccessHandlers } from './handlers/access';
import { registerSystemHandlers } from './handlers/system';
// TEMPORARY: stand-in for the agent lookup (see the file); remove on merge with the real handler.
import { registerAgentLookupStub } from './handlers/agent-lookup-stub';

export const management = defineService({
  name: 'management',
  config: managementConfig,
  uses: { mongo: true, redis: true },
  async start({ config, bus, pub, db, redis, nc }) {
    const announceRevoked = (r: CredentialRevoked) => nc.publish(CREDENTIAL_REVOKED_SUBJECT, encode(r));
    const relays: OutboxRelay[] = [];
    const relayFor = (get: () => OutboxRelay | undefined) => () => get()!;
    let apiKeyRelay: OutboxRelay | undefined;
    let destinationRelay: OutboxRelay | undefined;
    const apiKeys = apiKeyRepo(db!, relayFor(() => apiKeyRelay));
    const destinations = webhookDestinationRepo(db!, relayFor(() => destinationRelay));
    apiKeyRelay = outboxRelay(apiKeys.model, pub);
    destinationRelay = outboxRelay(destinations.model, pub);
    relays.push(apiKeyRelay, destinationRelay);
    await Promise.all([apiKeys.model.init(), destinations.model.init()]);
    await Promise.all(relays.map((r) => r.sweep()));

    const cookieName = `${config.SESSION_COOKIE_PREFIX}.session_token`;
    registerSystemHandlers(bus, instanceId);
    registerAgentLookupStub(bus); // TEMPORARY stand-in, see handlers/agent-lookup-stub.ts
    registerApiKeyHandlers(bus, { apiKeys, pepper: config.TOKEN_PEPPER, announceRevoked });
    registerWebhookDestinationHandlers(bus, { destinations });
    registerAccessHandlers(
      bus,
      {
        db: db!,
        sessions: sessionStore(redis!),
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
        await Promise.all(relays.map((r) => r.stop()));
      },
    };
  },
});
