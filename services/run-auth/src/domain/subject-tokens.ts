import {
  AUTH_METHODS,
  type VerifySubjectTokenReply,
  type VerifySubjectTokenRequest,
  verifyApiKey,
} from '@platform/contracts';
import { checkAppToken, type AuthenticateDeps } from './authenticate';

const iso = (exp: number | undefined) => (exp ? new Date(exp * 1000).toISOString() : null);

/**
 * Verifies the subject token of a token exchange for one app (the credential gateway asks). Which credentials count:
 * - apps of type `api`: an API key of the app's tenant and project;
 * - `web_client` / `support_copilot` apps: an app JWT signed with one of the app's keys, or (web_client with
 *   allowAnonymous) an anonymous session token of the app.
 * The Origin is not checked: the token is the proof, and the exchange is not a page request of the app's site.
 */
export async function verifySubjectToken(
  deps: AuthenticateDeps,
  req: VerifySubjectTokenRequest,
): Promise<VerifySubjectTokenReply> {
  const app = await deps.apps.get(req.appId);
  if (!app || !app.enabled) return { result: 'unknown_app' };
  const token = req.token.trim();
  const scope = { appId: app.id, appType: app.type, tenantId: app.tenantId, projectId: app.projectId };
  if (token.startsWith('sk_')) {
    if (app.type !== 'api')
      return { result: 'invalid', reason: 'API keys are subject tokens of apps of type api only' };
    const key = await deps.bus.callInternal(verifyApiKey, { key: token });
    if (!key) return { result: 'invalid', reason: 'the API key is invalid, expired or revoked' };
    if (key.tenantId !== app.tenantId || key.projectId !== app.projectId)
      return { result: 'invalid', reason: 'the API key belongs to another project than the app' };
    deps.apps.markUsed(app.id);
    return {
      result: 'ok',
      ...scope,
      subject: `api_key:${key.id}`,
      authMethod: AUTH_METHODS.apiKey,
      expiresAt: key.expiresAt,
    };
  }
  if (app.type === 'api') return { result: 'invalid', reason: 'apps of type api exchange API keys only' };
  const checked = await checkAppToken(deps, app, token);
  if (!checked.ok) return { result: 'invalid', reason: checked.why };
  if (!checked.subject) return { result: 'invalid', reason: 'the token has no subject' };
  deps.apps.markUsed(app.id);
  return {
    result: 'ok',
    ...scope,
    subject: checked.subject,
    authMethod: checked.authMethod,
    expiresAt: iso(checked.exp),
  };
}
