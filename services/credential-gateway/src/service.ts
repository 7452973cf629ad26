import { signingKeysChanged } from '@platform/contracts';
import { publishNotice, startErasureWorker, subscribeNotice } from '@platform/bus';
import { eraseProjectDocuments } from '@platform/mongo';
import { getLogger } from '@platform/logger';
import { defineService } from '@platform/runtime';
import { startAuditLog } from '@platform/audit';
import { credentialGatewayConfig } from './config';
import { readCatalogFile } from './data/catalog-file';
import { signingKeyRepo } from './data/signing-key.repo';
import { signingKeyBinding, signingKeyRings } from './data/signing-key.model';
import { subjectTokenVerifier } from './data/subject-tokens';
import { buildCatalog } from './domain/catalog';
import { DEFAULT_PLATFORMS } from './domain/default-platforms';
import { keyring } from './domain/signing-keys';
import { registerPlatformHandlers } from './handlers/platforms';
import { registerSigningKeyHandlers } from './handlers/signing-keys';
import { registerTokenHandlers } from './handlers/tokens';

const log = getLogger('credential-gateway');

/** RFC 8693 token exchange for platforms of the catalog, the catalog itself, and the key set that verifies issued tokens. */
export const credentialGateway = defineService({
  name: 'credential-gateway',
  config: credentialGatewayConfig,
  async start({ bus, config, db, outbox, nc, box }) {
    const file = config.CREDENTIAL_GATEWAY_PLATFORMS_FILE;
    const catalog = file ? buildCatalog(readCatalogFile(file), file) : buildCatalog(DEFAULT_PLATFORMS, 'built-in');

    // Keys sealed under keys not in ENCRYPTION_KEYS live in other rings and are never read here.
    const store = signingKeyRepo(db, signingKeyRings(box));
    const keys = keyring({
      store,
      box: {
        seal: (plaintext, kid) => box.seal(plaintext, signingKeyBinding(kid)),
        open: (sealed, kid) => box.open(sealed, signingKeyBinding(kid)),
      },
      alg: config.CREDENTIAL_GATEWAY_SIGNING_ALG,
      tokenTtlSeconds: config.CREDENTIAL_GATEWAY_TOKEN_TTL_SECONDS,
      refreshSeconds: config.CREDENTIAL_GATEWAY_KEY_REFRESH_SECONDS,
      rotationDays: config.CREDENTIAL_GATEWAY_KEY_ROTATION_DAYS,
      announce: (kid) => publishNotice(nc, signingKeysChanged, { kid }),
    });
    await keys.refresh();
    const refresh = () =>
      keys.refresh().catch((err) => log.warn({ err: (err as Error).message }, 'signing keys could not be reread'));
    const timer = setInterval(refresh, config.CREDENTIAL_GATEWAY_KEY_REFRESH_SECONDS * 1000);
    timer.unref();
    // Every replica (no queue group) rereads at once after a rotation elsewhere.
    const changes = subscribeNotice(nc, signingKeysChanged, 'credential-gateway', () => void refresh(), {
      onInvalid: () => void refresh(),
    });

    // Key rotations (the platform admin's) are audited here; token exchanges are not (docs/security.md, "Audit log").
    const audit = await startAuditLog({ bus, db, outbox, settleSeconds: config.AUDIT_PENDING_SETTLE_SECONDS });
    registerPlatformHandlers(bus, { catalog, maxAgeSeconds: config.CREDENTIAL_GATEWAY_CATALOG_MAX_AGE_SECONDS });
    registerSigningKeyHandlers(bus, { keys, maxAgeSeconds: config.CREDENTIAL_GATEWAY_JWKS_MAX_AGE_SECONDS });
    registerTokenHandlers(bus, {
      catalog,
      keys,
      subjectTokens: subjectTokenVerifier(bus),
      issuer: config.CREDENTIAL_GATEWAY_ISSUER,
      tokenTtlSeconds: config.CREDENTIAL_GATEWAY_TOKEN_TTL_SECONDS,
    });
    const erasure = await startErasureWorker(nc, bus, 'credential-gateway', {
      eraseProject: (scope) => eraseProjectDocuments(db, scope),
    });
    return {
      async stop() {
        await erasure.stop();
        clearInterval(timer);
        changes.unsubscribe();
        await audit.stop();
      },
    };
  },
});
