import {
  AUTH_METHODS,
  type AppForAuth,
  type AuthenticateRunRequest,
  type Principal,
  verifyApiKey,
  verifyPlaygroundToken,
} from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';
import { AppError } from '@platform/problems';
import { getLogger } from '@platform/logger';
import type { AppDirectory } from '../data/app-directory';
import { originAllowed } from './origin';
import { verifyAppJwt, type AnonymousTokens } from './tokens';

const PLAYGROUND_APP_ID = 'app_playground';

export interface AuthenticateDeps {
  bus: ServiceBus;
  apps: AppDirectory;
  anonymous: AnonymousTokens;
  clockToleranceSeconds: number;
  maxLifetimeSeconds: number;
}

const log = getLogger('run-auth.authenticate');

const unauthorized = (detail = 'Authentication failed: the credential is missing, invalid, expired or revoked') =>
  new AppError('unauthorized', detail);

type RunPrincipal = Extract<Principal, { kind: 'run' }>;

/** The run scope an app credential acts in: the app's tenant and project, its default agent (and the `main` ref when it has one). */
function appPrincipal(
  app: AppForAuth,
  authMethod: string,
  subject: string | undefined,
  exp: number | undefined,
): RunPrincipal {
  return {
    kind: 'run',
    tenantId: app.tenantId,
    projectId: app.projectId,
    ...(app.defaultAgentId ? { agentId: app.defaultAgentId, ref: 'main' } : {}),
    appId: app.id,
    ...(subject ? { subject } : {}),
    authMethod,
    expiresAt: exp ? new Date(exp * 1000).toISOString() : null,
  };
}

/** Resolves a run-API bearer credential to a principal, trying each strategy by the credential's form. */
export async function authenticateRun(deps: AuthenticateDeps, req: AuthenticateRunRequest): Promise<Principal> {
  const token = req.token.trim();
  if (token.startsWith('sk_')) {
    const key = await deps.bus.callInternal(verifyApiKey, { key: token });
    if (!key) throw unauthorized();
    return {
      kind: 'run',
      tenantId: key.tenantId,
      projectId: key.projectId,
      agentId: key.agentId,
      apiKeyId: key.id,
      authMethod: AUTH_METHODS.apiKey,
      ref: 'main',
      expiresAt: key.expiresAt,
    };
  }
  // Playground tokens name `app_playground`, which is not a stored app: they take the playground path below.
  if (req.appId && req.appId !== PLAYGROUND_APP_ID)
    return authenticateAppCredential(deps, req.appId, token, req.origin);
  if (token.split('.').length === 3) {
    const claims = await deps.bus.callInternal(verifyPlaygroundToken, { token });
    if (claims) {
      return {
        kind: 'run',
        tenantId: claims.tenantId,
        projectId: claims.projectId,
        agentId: claims.agentId,
        subject: claims.subject,
        appId: PLAYGROUND_APP_ID,
        authMethod: AUTH_METHODS.playground,
        ref: 'main',
      };
    }
  }
  throw unauthorized();
}

/**
 * App credentials (`x-app-id` selects the app):
 * - a JWT whose `kid` names one of the app's keys: `web_client` → app_credential_web_client_authenticated
 *   (Origin must be allowed unless the token carries `internal: true`); `support_copilot` → app_credential_support_copilot;
 * - otherwise, for a `web_client` app with allowAnonymous, an anonymous session token of that app → app_credential_web_client
 *   (Origin must be allowed).
 */
async function authenticateAppCredential(
  deps: AuthenticateDeps,
  appId: string,
  token: string,
  origin: string | undefined,
): Promise<Principal> {
  const app = await deps.apps.get(appId);
  if (!app || !app.enabled) throw unauthorized('Authentication failed: unknown or disabled app');
  if (app.type === 'api') throw unauthorized('Authentication failed: apps of type api authenticate with API keys');
  const checked = await checkAppToken(deps, app, token);
  if (!checked.ok) throw unauthorized(`Authentication failed: ${checked.why}`);
  if (
    app.type === 'web_client' &&
    !checked.internal &&
    !originAllowed(origin, app.config.webClient?.allowedDomains ?? [])
  ) {
    throw new AppError('forbidden', 'Origin not allowed');
  }
  deps.apps.markUsed(app.id);
  return appPrincipal(app, checked.authMethod, checked.subject, checked.exp);
}

export type AppTokenCheck =
  | { ok: true; authMethod: string; subject: string | undefined; exp: number | undefined; internal: boolean }
  | { ok: false; why: string };

/**
 * Is `token` a valid credential of `app` (a web_client or support_copilot app)? An app JWT whose `kid` names one of the
 * app's keys, else (web_client with allowAnonymous) an anonymous session token of the app. No Origin check here.
 */
export async function checkAppToken(deps: AuthenticateDeps, app: AppForAuth, token: string): Promise<AppTokenCheck> {
  const audience =
    app.type === 'web_client'
      ? (app.config.webClient?.audience ?? null)
      : (app.config.supportCopilot?.audience ?? null);
  const checked = await verifyAppJwt(token, app, audience, {
    clockToleranceSeconds: deps.clockToleranceSeconds,
    maxLifetimeSeconds: deps.maxLifetimeSeconds,
  });
  if (checked.ok) {
    const claims = checked.claims;
    const authMethod = app.type === 'support_copilot' ? AUTH_METHODS.supportCopilot : AUTH_METHODS.appJwt;
    return { ok: true, authMethod, subject: claims.sub, exp: claims.exp, internal: claims.internal === true };
  }
  if (checked.reason !== 'unknown_kid') {
    log.info({ appId: app.id, reason: checked.reason }, 'app credential refused');
    const why = {
      expired: 'the token has expired',
      audience: 'the token audience does not match the app',
      lifetime: 'the token lifetime is too long',
      future: 'the token was issued in the future (check the clock)',
      claims: 'the token claims are too large',
      invalid: 'the token signature or claims are invalid',
    }[checked.reason];
    return { ok: false, why };
  }
  if (app.type === 'web_client' && app.config.webClient?.allowAnonymous) {
    const anon = await deps.anonymous.verify(token, app.id);
    if (anon && anon.tid === app.tenantId && anon.pid === app.projectId) {
      return { ok: true, authMethod: AUTH_METHODS.anonymous, subject: anon.sub, exp: anon.exp, internal: false };
    }
  }
  log.info({ appId: app.id, reason: 'no matching key or anonymous session' }, 'app credential refused');
  return { ok: false, why: 'the credential is missing, invalid, expired or revoked' };
}
