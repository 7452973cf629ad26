import { TeamId, type Principal } from '@platform/contracts';
import { randomId } from '@platform/secrets';
import { getLogger } from '@platform/logger';
import { ChatApiError, type OAuthInstall } from '../clients/chat-api';
import type { ChatappDeps } from './deps';
import { notConfigured } from './chat-errors';
import { secondsLeft, signToken, verifyToken } from './tokens';
import { tenantFor } from './access';
import { workspaceBinding } from '../data/workspace.repo';

const log = getLogger('chatapp.install');

export const STATE_TTL_SECONDS = 600;
export const OAUTH_REDIRECT_PATH = '/work-apps/chatapp/oauth_redirect';
const INSTALL_PATH = '/work-apps/chatapp/install';

interface StateClaims {
  tid: string;
  pid: string | null;
  wh: boolean;
}

function redirectUri(deps: ChatappDeps, baseUrl: string | undefined): string {
  return deps.settings.redirectUrl ?? `${(baseUrl ?? '').replace(/\/$/, '')}${OAUTH_REDIRECT_PATH}`;
}

/**
 * An install link for the caller's tenant: the public install route with a signed, 10-minute, single-use token
 * naming the tenant and project. Only such a link can bind a workspace to a tenant (anyone can open the install
 * route, so the tenant cannot come from its query).
 */
export function mintInstallLink(
  deps: ChatappDeps,
  principal: Principal,
  body: { tenantId?: string; projectId?: string; includeWebhook?: boolean },
  baseUrl?: string,
) {
  const { authorizeUrl, clientId } = deps.settings;
  if (!deps.chat.configured || !authorizeUrl || !clientId) throw notConfigured();
  const claims: StateClaims = {
    tid: tenantFor(principal, body.tenantId),
    pid: body.projectId ?? null,
    wh: body.includeWebhook ?? false,
  };
  const { token, expiresAt } = signToken(deps.settings.stateSecret, 'installLink', { ...claims }, STATE_TTL_SECONDS);
  const url = new URL(`${(baseUrl ?? '').replace(/\/$/, '')}${INSTALL_PATH}`);
  url.searchParams.set('link', token);
  return { url: url.toString(), expiresAt: expiresAt.toISOString() };
}

/**
 * The chat product's authorize URL for a new installation, with a signed, expiring, one-time `state`; or, without a
 * valid install link (missing, forged, expired, used, or for another tenant than `tenant_id`), the result page with
 * `error=install_not_authorized`.
 */
export async function startInstall(
  deps: ChatappDeps,
  q: { link?: string; tenant_id?: string; project_id?: string; include_webhook?: string },
  baseUrl?: string,
): Promise<string> {
  const { authorizeUrl, clientId } = deps.settings;
  if (!deps.chat.configured || !authorizeUrl || !clientId) throw notConfigured();
  const refuse = (reason: string) => {
    log.warn({ reason, tenant_id: q.tenant_id }, 'chat-app installation refused: no valid install link');
    return resultUrl(deps, { error: 'install_not_authorized', reason });
  };
  if (!q.link) return refuse('missing');
  const verified = verifyToken<StateClaims>(deps.settings.acceptedStateSecrets, 'installLink', q.link);
  if ('problem' in verified) return refuse(verified.problem);
  const { tid, pid, wh, jti, exp } = verified.claims;
  if (
    (q.tenant_id !== undefined && q.tenant_id !== tid) ||
    (q.project_id !== undefined && pid !== null && q.project_id !== pid)
  )
    return refuse('tenant_mismatch');
  if (!(await deps.nonces.claim('install-link', jti, secondsLeft(exp)))) return refuse('replayed');
  const webhook = wh || q.include_webhook?.toLowerCase() === 'true';
  const claims: StateClaims = { tid, pid: pid ?? q.project_id ?? null, wh: webhook };
  const { token } = signToken(deps.settings.stateSecret, 'state', { ...claims }, STATE_TTL_SECONDS);
  const scopes = [...deps.settings.scopes, ...(webhook ? ['incoming-webhook'] : [])];
  const url = new URL(authorizeUrl);
  url.searchParams.set('client_id', clientId);
  url.searchParams.set('scope', [...new Set(scopes)].join(','));
  url.searchParams.set('redirect_uri', redirectUri(deps, baseUrl));
  url.searchParams.set('state', token);
  return url.toString();
}

function resultUrl(deps: ChatappDeps, params: Record<string, string | undefined>): string {
  const url = new URL(deps.settings.resultUrl);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v);
  return url.toString();
}

/** Only a short word of the chat product's `error` travels on to the result page. */
const safeWord = (s: string) => s.replace(/[^A-Za-z0-9_.-]/g, '').slice(0, 64) || 'unknown_error';

/**
 * The OAuth callback: verify the state (signature, expiry, first use), exchange the code, store the workspace
 * with its bot token sealed, and answer the result page URL (success or `error`).
 */
export async function finishInstall(
  deps: ChatappDeps,
  q: { code?: string; error?: string; state?: string },
  baseUrl?: string,
): Promise<string> {
  const fail = (error: string, extra: Record<string, string | undefined> = {}) => {
    log.warn({ error, ...extra }, 'chat-app installation failed');
    return resultUrl(deps, { error, ...extra });
  };
  if (q.error) return fail(safeWord(q.error));
  if (!q.state) return fail('invalid_state', { reason: 'missing' });
  const verified = verifyToken<StateClaims>(deps.settings.acceptedStateSecrets, 'state', q.state);
  if ('problem' in verified) return fail('invalid_state', { reason: verified.problem });
  const { tid: tenantId, pid: projectId, jti, exp } = verified.claims;
  if (!(await deps.nonces.claim('state', jti, secondsLeft(exp))))
    return fail('invalid_state', { reason: 'replayed', tenant_id: tenantId });
  if (!q.code) return fail('no_code', { tenant_id: tenantId });
  if (!deps.chat.configured) return fail('not_configured', { tenant_id: tenantId });

  let install: OAuthInstall;
  try {
    install = await deps.chat.oauthAccess(q.code, redirectUri(deps, baseUrl));
  } catch (err) {
    if (err instanceof ChatApiError)
      return fail('oauth_failed', { reason: safeWord(err.chatError), tenant_id: tenantId });
    throw err;
  }
  if (!TeamId.safeParse(install.teamId).success)
    return fail('oauth_failed', { reason: 'invalid_team_id', tenant_id: tenantId });

  // The domain name is a nicety: auth.test failing here does not undo an installation that worked.
  let teamDomain: string | null = null;
  try {
    const info = await deps.chat.authTest(install.botToken);
    teamDomain = info.url ? (new URL(info.url).hostname.split('.')[0] ?? null) : null;
  } catch {
    teamDomain = null;
  }
  // The bot token and webhook URL open only for this workspace of this tenant.
  const sealedFor = workspaceBinding({ _id: install.teamId, tenantId });
  const saved = await deps.workspaces.upsertInstall(
    {
      _id: install.teamId,
      tenantId,
      projectId,
      connectionId: randomId(20),
      teamName: install.teamName,
      teamDomain,
      appId: install.appId,
      botUserId: install.botUserId,
      botTokenSealed: deps.box.seal(install.botToken, sealedFor),
      scopes: install.scopes,
      installerUserId: install.installerUserId,
      incomingWebhook: install.incomingWebhook
        ? {
            channelId: install.incomingWebhook.channelId,
            channel: install.incomingWebhook.channel,
            urlSealed: deps.box.seal(install.incomingWebhook.url, sealedFor),
          }
        : null,
      updatedAt: new Date(),
    },
    new Date(),
  );
  if (!saved) return fail('workspace_already_installed', { tenant_id: tenantId, teamId: install.teamId });
  log.info({ teamId: install.teamId, tenantId }, 'chat workspace installed');
  return resultUrl(deps, { success: 'true', workspace: install.teamName, teamId: install.teamId, tenant_id: tenantId });
}
