import jwt from 'jsonwebtoken';
import type { z } from 'zod';
import type { AccessTokenCreate, Principal, RequestMeta, SessionInfo } from '@platform/contracts';
import { AppError } from '@platform/problems';
import { keyedHash, randomId, randomSecret, safeEqual, sessionId } from '@platform/secrets';
import { type StoredAccessToken, toAccessToken, type AccessTokenRepo } from '../data/access-token.repo';
import { ADMIN_SESSIONS, type SessionStore, type StoredSession } from '../data/session.store';

export interface AccessDeps {
  accessTokens: AccessTokenRepo;
  sessions: SessionStore;
  adminToken: string;
  pepper: string;
  sessionTtlSeconds: number;
  playgroundKey: string;
  playgroundTtlSeconds: number;
  announceRevoked(r: { apiKeyId?: string; accessTokenId?: string; sessionId?: string }): void;
}

const TOKEN_PATTERN = /^mt_([0-9A-Za-z]{12})\.([A-Za-z0-9_-]{43})$/;

export async function issueAccessToken(deps: AccessDeps, tenantId: string, input: z.infer<typeof AccessTokenCreate>) {
  const id = randomId(12);
  const token = `mt_${id}.${randomSecret(32)}`;
  const doc: StoredAccessToken = {
    _id: id,
    tenantId,
    name: input.name,
    role: input.role ?? 'admin',
    userId: input.userId ?? `user_${id}`,
    tokenHash: keyedHash(deps.pepper, token),
    expiresAt: input.expiresAt ? new Date(input.expiresAt) : null,
    createdAt: new Date(),
  };
  await deps.accessTokens.insert(doc);
  return { accessToken: toAccessToken(doc), token };
}

export async function listAccessTokensPage(deps: AccessDeps, tenantId: string, page: number, limit: number) {
  return deps.accessTokens.listPage(tenantId, page, limit);
}

export async function revokeAccessToken(deps: AccessDeps, tenantId: string, id: string) {
  if (!(await deps.accessTokens.remove(tenantId, id))) throw new AppError('not_found', 'Access token not found');
  // Gateways drop the token and every session they remember under it; the sessions themselves end here.
  deps.announceRevoked({ accessTokenId: id });
  await endSessions(deps, tenantId, (s) => s.accessTokenId === id);
}

/** Resolves a management bearer token: the admin token, or a tenant access token. */
export async function resolveBearer(deps: AccessDeps, token: string): Promise<Principal | null> {
  if (safeEqual(token, deps.adminToken)) return { kind: 'admin', via: 'bearer' };
  const m = TOKEN_PATTERN.exec(token);
  if (!m) return null;
  const doc = await deps.accessTokens.findForVerify(m[1]!);
  if (!doc || !safeEqual(doc.tokenHash, keyedHash(deps.pepper, token))) return null;
  if (doc.expiresAt && doc.expiresAt <= new Date()) return null;
  return {
    kind: 'user',
    userId: doc.userId,
    tenantId: doc.tenantId,
    role: doc.role,
    via: 'bearer',
    accessTokenId: doc._id,
    expiresAt: doc.expiresAt?.toISOString() ?? null,
  };
}

/** Whether the access token a session was made from still works (it was not revoked and has not expired). */
async function tokenStillValid(deps: AccessDeps, accessTokenId: string): Promise<boolean> {
  const doc = await deps.accessTokens.findForVerify(accessTokenId);
  return doc !== null && !(doc.expiresAt && doc.expiresAt <= new Date());
}

/**
 * Resolves a session cookie. A session made from an access token works only while that token does: a session whose
 * token was revoked or expired is ended on the spot (revocation also ends them all at once, see revokeAccessToken).
 */
export async function resolveSession(deps: AccessDeps, session: string): Promise<Principal | null> {
  if (!/^[A-Za-z0-9_-]{20,100}$/.test(session)) return null;
  const hash = keyedHash(deps.pepper, session);
  const stored = await deps.sessions.get(hash);
  if (!stored || Date.parse(stored.expiresAt) <= Date.now()) return null;
  if (stored.accessTokenId && !(await tokenStillValid(deps, stored.accessTokenId))) {
    await deps.sessions.remove(hash, stored);
    return null;
  }
  const p = stored.principal;
  if (p.kind === 'admin') return { kind: 'admin', via: 'cookie' };
  return p.kind === 'user' ? { ...p, via: 'cookie', expiresAt: stored.expiresAt } : null;
}

/** A new session for a management credential: it lasts `sessionTtlSeconds`, never past its access token's expiry. */
export async function openSession(deps: AccessDeps, principal: Principal, meta: RequestMeta | undefined) {
  if (principal.kind !== 'admin' && principal.kind !== 'user')
    throw new AppError('unauthorized', 'A management credential is required');
  const now = Date.now();
  const tokenExpiry = principal.kind === 'user' && principal.expiresAt ? Date.parse(principal.expiresAt) : Infinity;
  const ttlSeconds = Math.min(deps.sessionTtlSeconds, Math.floor((tokenExpiry - now) / 1000));
  if (ttlSeconds < 1) throw new AppError('unauthorized', 'The bearer token is invalid, expired or revoked');
  const session = randomSecret(32);
  const expiresAt = new Date(now + ttlSeconds * 1000).toISOString();
  const stored: StoredSession = {
    id: sessionId(session),
    principal: principal.kind === 'admin' ? principal : { ...principal, expiresAt: undefined },
    accessTokenId: principal.kind === 'user' ? (principal.accessTokenId ?? null) : null,
    createdAt: new Date(now).toISOString(),
    expiresAt,
    ip: meta?.ip ?? null,
    userAgent: meta?.userAgent?.slice(0, 512) ?? null,
  };
  await deps.sessions.put(keyedHash(deps.pepper, session), stored, ttlSeconds);
  return { session, expiresAt };
}

export async function closeSession(deps: AccessDeps, session: string) {
  const hash = keyedHash(deps.pepper, session);
  const stored = await deps.sessions.get(hash);
  if (stored) await deps.sessions.remove(hash, stored);
  deps.announceRevoked({ sessionId: sessionId(session) });
}

/** Which sessions a caller may see and end as their own: the same user of the same tenant, or the admin's. */
function ownSessions(principal: Principal): { owner: string; mine: (s: StoredSession) => boolean } {
  if (principal.kind === 'admin') return { owner: ADMIN_SESSIONS, mine: (s) => s.principal.kind === 'admin' };
  if (principal.kind !== 'user') throw new AppError('forbidden', 'This credential cannot be used here');
  return {
    owner: principal.tenantId,
    mine: (s) => s.principal.kind === 'user' && s.principal.userId === principal.userId,
  };
}

function toSessionInfo(s: StoredSession, currentId: string | undefined): SessionInfo {
  const p = s.principal;
  const user = p.kind === 'user' ? p : undefined;
  return {
    id: s.id,
    kind: user ? 'user' : 'admin',
    tenantId: user?.tenantId ?? null,
    userId: user?.userId ?? null,
    role: user?.role ?? null,
    accessTokenId: s.accessTokenId,
    createdAt: s.createdAt,
    expiresAt: s.expiresAt,
    ip: s.ip,
    userAgent: s.userAgent,
    current: s.id === currentId,
  };
}

/** The sessions of an owner that `which` selects, as the API shows them, one page of them. */
async function sessionsPage(
  deps: AccessDeps,
  owner: string,
  which: (s: StoredSession) => boolean,
  page: number,
  limit: number,
  currentCookie: string | undefined,
) {
  const all = (await deps.sessions.listOf(owner)).filter((f) => which(f.session));
  const currentId = currentCookie ? sessionId(currentCookie) : undefined;
  return {
    rows: all.slice((page - 1) * limit, page * limit).map((f) => toSessionInfo(f.session, currentId)),
    total: all.length,
  };
}

/** Ends the sessions of an owner that `which` selects; every gateway forgets them at once. Answers how many ended. */
async function endSessions(deps: AccessDeps, owner: string, which: (s: StoredSession) => boolean): Promise<number> {
  const found = (await deps.sessions.listOf(owner)).filter((f) => which(f.session));
  await deps.sessions.removeAll(owner, found);
  for (const f of found) deps.announceRevoked({ sessionId: f.session.id });
  return found.length;
}

export function listMySessionsPage(
  deps: AccessDeps,
  principal: Principal,
  page: number,
  limit: number,
  currentCookie: string | undefined,
) {
  const { owner, mine } = ownSessions(principal);
  return sessionsPage(deps, owner, mine, page, limit, currentCookie);
}

export async function endMySession(deps: AccessDeps, principal: Principal, id: string) {
  const { owner, mine } = ownSessions(principal);
  if ((await endSessions(deps, owner, (s) => s.id === id && mine(s))) === 0)
    throw new AppError('not_found', 'Session not found');
}

export function listTenantSessionsPage(
  deps: AccessDeps,
  tenantId: string,
  page: number,
  limit: number,
  currentCookie: string | undefined,
) {
  return sessionsPage(deps, tenantId, () => true, page, limit, currentCookie);
}

export function endTenantSessions(deps: AccessDeps, tenantId: string, userId: string | undefined) {
  return endSessions(
    deps,
    tenantId,
    (s) => userId === undefined || (s.principal.kind === 'user' && s.principal.userId === userId),
  );
}

export async function endTenantSession(deps: AccessDeps, tenantId: string, id: string) {
  if ((await endSessions(deps, tenantId, (s) => s.id === id)) === 0)
    throw new AppError('not_found', 'Session not found');
}

/** A short-lived run-API token for the playground: HS256 JWT with tenant, project and agent claims. */
export function issuePlaygroundToken(
  deps: AccessDeps,
  principal: Principal,
  tenantId: string,
  projectId: string,
  agentId: string,
) {
  const sub = principal.kind === 'user' ? principal.userId : 'admin';
  const expiresAt = new Date(Date.now() + deps.playgroundTtlSeconds * 1000);
  const apiKey = jwt.sign({ tid: tenantId, pid: projectId, agentId, type: 'playground' }, deps.playgroundKey, {
    algorithm: 'HS256',
    subject: sub,
    issuer: 'platform',
    audience: 'platform-run',
    expiresIn: deps.playgroundTtlSeconds,
    jwtid: randomId(16),
  });
  return { apiKey, appId: 'app_playground', expiresAt: expiresAt.toISOString() };
}

export function verifyPlaygroundToken(deps: AccessDeps, token: string) {
  try {
    const claims = jwt.verify(token, deps.playgroundKey, {
      algorithms: ['HS256'],
      issuer: 'platform',
      audience: 'platform-run',
    }) as jwt.JwtPayload;
    if (claims.type !== 'playground') return null;
    return {
      tenantId: String(claims.tid),
      projectId: String(claims.pid),
      agentId: String(claims.agentId),
      subject: String(claims.sub),
    };
  } catch {
    return null;
  }
}
