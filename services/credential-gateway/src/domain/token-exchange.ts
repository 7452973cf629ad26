import { randomUUID } from 'node:crypto';
import {
  ACCESS_TOKEN_TYPE,
  TOKEN_EXCHANGE_GRANT_TYPE,
  type TokenExchangeReply,
  type TokenExchangeRequest,
  type VerifySubjectTokenReply,
} from '@platform/contracts';
import { AppError } from '@platform/problems';
import { getLogger } from '@platform/logger';
import { mayUse, resourceAllowed, type Catalog } from './catalog';
import type { Keyring } from './signing-keys';

export interface TokenExchangeDeps {
  catalog: Catalog;
  keys: Keyring;
  subjectTokens: { verify(token: string, appId: string): Promise<VerifySubjectTokenReply> };
  issuer: string;
  tokenTtlSeconds: number;
}

const log = getLogger('credential-gateway.token-exchange');

/** An OAuth error (RFC 6749 §5.2 / RFC 8693 §2.2.2): 400 unless it is `invalid_client` (401). */
function oauthError(
  error: 'unsupported_grant_type' | 'invalid_grant' | 'invalid_target' | 'invalid_client',
  description: string,
): AppError {
  return new AppError(error === 'invalid_client' ? 'unauthorized' : 'bad_request', description, { oauthError: error });
}

/**
 * RFC 8693 token exchange: checks the grant type, has run-auth verify that the subject token is a credential of
 * `svc_app_id`'s app, checks that the app may use the `audience` platform (and that `resource` lies on it), then
 * signs a short-lived access token for that platform. Nothing is stored.
 */
export async function exchangeToken(deps: TokenExchangeDeps, input: TokenExchangeRequest): Promise<TokenExchangeReply> {
  if (input.grant_type !== TOKEN_EXCHANGE_GRANT_TYPE) {
    throw oauthError('unsupported_grant_type', `grant_type must be ${TOKEN_EXCHANGE_GRANT_TYPE}`);
  }
  const verified = await deps.subjectTokens.verify(input.subject_token, input.svc_app_id);
  if (verified.result === 'unknown_app') throw oauthError('invalid_client', 'svc_app_id names no enabled app');
  if (verified.result === 'invalid') {
    log.info({ appId: input.svc_app_id, reason: verified.reason }, 'subject token refused');
    throw oauthError('invalid_grant', `The subject token is not a valid credential of this app: ${verified.reason}`);
  }
  const platform = deps.catalog.find(input.audience);
  if (!platform || !mayUse(platform, verified))
    throw oauthError('invalid_target', 'audience is not a platform this app may use');
  if (input.resource !== undefined && !resourceAllowed(platform, input.resource)) {
    throw oauthError('invalid_target', 'resource is not an http(s) URL on a host of the audience platform');
  }

  const now = Math.floor(Date.now() / 1000);
  // The issued token never outlives the credential it was exchanged for.
  const subjectExp = verified.expiresAt ? Math.floor(Date.parse(verified.expiresAt) / 1000) : Number.POSITIVE_INFINITY;
  const exp = Math.min(now + deps.tokenTtlSeconds, subjectExp);
  if (exp <= now) throw oauthError('invalid_grant', 'The subject token has expired');
  const accessToken = await deps.keys.sign({
    iss: deps.issuer,
    sub: verified.subject,
    aud: platform.slug,
    iat: now,
    exp,
    jti: randomUUID(),
    client_id: verified.appId,
    tid: verified.tenantId,
    pid: verified.projectId,
    auth_method: verified.authMethod,
    ...(input.resource !== undefined ? { resource: input.resource } : {}),
  });
  return {
    access_token: accessToken,
    expires_in: exp - now,
    issued_token_type: ACCESS_TOKEN_TYPE,
    token_type: 'Bearer',
  };
}
