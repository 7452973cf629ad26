import { appChanged } from '@platform/contracts';
import { subscribeNotice } from '@platform/bus';
import { defineService } from '@platform/runtime';
import { keyedHash } from '@platform/secrets';
import { runAuthConfig } from './config';
import { appDirectory } from './data/app-directory';
import { challengeStore } from './data/challenge.store';
import { challengeUpstream } from './data/challenge-upstream';
import { anonymousTokens } from './domain/tokens';
import type { ChallengeDeps } from './domain/challenges';
import { registerAuthenticateHandler } from './handlers/authenticate';
import { registerAnonymousSessionHandlers } from './handlers/anonymous-sessions';
import { registerChallengeHandlers } from './handlers/challenges';
import { registerSubjectTokenHandler } from './handlers/subject-tokens';

function secret(explicit: string | undefined, seed: string | undefined, purpose: string): string {
  if (explicit) return explicit;
  if (!seed)
    throw new Error(
      `Invalid configuration: set ${purpose === 'anonymous-session' ? 'ANONYMOUS_SESSION_SECRET' : 'CHALLENGE_HMAC_KEY'} or SIGNING_KEY_SEED`,
    );
  return keyedHash(seed, `run-auth:${purpose}`);
}

export const runAuth = defineService({
  name: 'run-auth',
  config: runAuthConfig,
  async start({ bus, config, redis, nc }) {
    const apps = appDirectory(bus, config.AUTH_CACHE_TTL_MS);
    // Every replica drops a changed app at once (core NATS, no queue group). A callback, like the request handlers:
    // the change is applied as it is read off the connection, before a request that came after it starts (with an
    // iterator, a request in the same read could be authenticated first, against the app before the change).
    // An announcement that cannot be read drops every app this replica knows.
    const changes = subscribeNotice(nc, appChanged, 'run-auth', (change) => apps.apply(change), {
      onInvalid: () => apps.clear(),
    });

    const anonymous = anonymousTokens(
      secret(config.ANONYMOUS_SESSION_SECRET, config.SIGNING_KEY_SEED, 'anonymous-session'),
      config.ANONYMOUS_SESSION_TTL_SECONDS,
    );
    const challenge: ChallengeDeps = {
      enabled: config.CHALLENGE_ENABLED,
      legacyEnabled: config.LEGACY_POW_ENABLED,
      hmacKey: secret(config.CHALLENGE_HMAC_KEY, config.SIGNING_KEY_SEED, 'challenge'),
      maxNumber: config.CHALLENGE_MAX_NUMBER,
      ttlSeconds: config.CHALLENGE_TTL_SECONDS,
      store: challengeStore(redis, {
        points: config.CHALLENGE_RATE_LIMIT_POINTS,
        windowSeconds: config.CHALLENGE_RATE_LIMIT_WINDOW_SECONDS,
      }),
      apps,
      upstream: config.CHALLENGE_UPSTREAM_URL
        ? challengeUpstream(config.CHALLENGE_UPSTREAM_URL, config.CHALLENGE_UPSTREAM_TIMEOUT_MS)
        : undefined,
    };

    const authDeps = {
      bus,
      apps,
      anonymous,
      clockToleranceSeconds: config.APP_JWT_CLOCK_TOLERANCE_SECONDS,
      maxLifetimeSeconds: config.APP_JWT_MAX_LIFETIME_SECONDS,
    };
    registerAuthenticateHandler(bus, authDeps);
    registerSubjectTokenHandler(bus, authDeps);
    registerAnonymousSessionHandlers(bus, {
      apps,
      anonymous,
      challenge,
      requireChallenge: config.ANONYMOUS_SESSION_CHALLENGE === 'required',
    });
    registerChallengeHandlers(bus, challenge);
    return {
      async stop() {
        changes.unsubscribe();
      },
    };
  },
});
