import { AppError } from '@platform/problems';
import type { AppDirectory } from '../data/app-directory';
import { originAllowed } from './origin';
import { requireSolvedChallenge, type ChallengeDeps } from './challenges';
import type { AnonymousTokens } from './tokens';

export interface AnonymousSessionDeps {
  apps: AppDirectory;
  anonymous: AnonymousTokens;
  challenge: ChallengeDeps;
  requireChallenge: boolean;
}

/**
 * Starts (or renews) an anonymous session. Checks, in order: app exists and is enabled (404), is a web_client (400),
 * allows anonymous access (401), Origin allowed (403 "Origin not allowed"), then the bot check when required.
 * A still-valid anonymous token of the same app in `bearer` keeps its subject (rolling refresh); anything else starts a new identity.
 */
export async function startAnonymousSession(
  deps: AnonymousSessionDeps,
  appId: string,
  req: { origin?: string; bearer?: string; solution?: string },
) {
  const app = await deps.apps.get(appId);
  if (!app || !app.enabled) throw new AppError('not_found', 'App not found or disabled');
  if (app.type !== 'web_client')
    throw new AppError('bad_request', 'Anonymous sessions are only available for web_client apps');
  if (!app.config.webClient?.allowAnonymous)
    throw new AppError('unauthorized', 'This app does not allow anonymous access');
  if (!originAllowed(req.origin, app.config.webClient.allowedDomains))
    throw new AppError('forbidden', 'Origin not allowed');
  if (deps.requireChallenge) await requireSolvedChallenge(deps.challenge, appId, req.solution);
  const previous = req.bearer ? await deps.anonymous.verify(req.bearer, appId) : null;
  const keep = previous && previous.tid === app.tenantId && previous.pid === app.projectId ? previous.sub : undefined;
  return deps.anonymous.issue(app, keep);
}
