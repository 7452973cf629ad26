import { AUTH_METHODS, type AuthenticateRunRequest, type Principal, VERIFY_API_KEY_SUBJECT, type VerifiedApiKey } from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';
import { AppError } from '@platform/problems';

export const VERIFY_PLAYGROUND_TOKEN_SUBJECT = 'svc.management.playground.verify';

export interface AuthenticateDeps {
  bus: ServiceBus;
}

const unauthorized = (detail = 'Authentication failed: the credential is missing, invalid, expired or revoked') => new AppError('unauthorized', detail);

/** Resolves a run-API bearer credential to a principal, trying each strategy by the credential's form. */
export async function authenticateRun(deps: AuthenticateDeps, req: AuthenticateRunRequest): Promise<Principal> {
  const token = req.token.trim();
  if (token.startsWith('sk_')) {
    const res = await deps.bus.requestWire(VERIFY_API_KEY_SUBJECT, { principal: { kind: 'anonymous' }, body: { key: token } });
    const key = res.body as VerifiedApiKey | null;
    if (!key) throw unauthorized();
    return { kind: 'run', tenantId: key.tenantId, projectId: key.projectId, agentId: key.agentId, apiKeyId: key.id, authMethod: AUTH_METHODS.apiKey, ref: 'main', expiresAt: key.expiresAt };
  }
  if (token.split('.').length === 3) {
    const res = await deps.bus.requestWire(VERIFY_PLAYGROUND_TOKEN_SUBJECT, { principal: { kind: 'anonymous' }, body: { token } });
    const claims = res.body as { tenantId: string; projectId: string; agentId: string; subject: string } | null;
    if (claims) {
      return { kind: 'run', tenantId: claims.tenantId, projectId: claims.projectId, agentId: claims.agentId, subject: claims.subject, appId: 'app_playground', authMethod: AUTH_METHODS.playground, ref: 'main' };
    }
  }
  throw unauthorized();
}
