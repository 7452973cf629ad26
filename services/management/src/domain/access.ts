import jwt from 'jsonwebtoken';
import type { z } from 'zod';
import type { AccessToken, AccessTokenCreate, Principal } from '@platform/contracts';
import { AppError } from '@platform/problems';
import { keyedHash, randomId, randomSecret, safeEqual, sessionId } from '@platform/secrets';
import type { Connection } from '@platform/mongo';
import { accessTokenModel, type AccessTokenDoc } from '../data/access-token.model';
import type { SessionStore } from '../data/session.store';

export interface AccessDeps {
  db: Connection;
  sessions: SessionStore;
  adminToken: string;
  pepper: string;
  sessionTtlSeconds: number;
  playgroundKey: string;
  playgroundTtlSeconds: number;
  announceRevoked(r: { apiKeyId?: string; accessTokenId?: string; sessionId?: string }): void;
}

const TOKEN_PATTERN = /^mt_([0-9A-Za-z]{12})\.([A-Za-z0-9_-]{43})$/;

function toAccessToken(d: AccessTokenDoc): AccessToken {
  return { id: d._id, tenantId: d.tenantId, name: d.name, role: d.role, userId: d.userId, expiresAt: d.expiresAt ? d.expiresAt.toISOString() : null, createdAt: d.createdAt.toISOString() };
}

export async function issueAccessToken(deps: AccessDeps, tenantId: string, input: z.infer<typeof AccessTokenCreate>) {
  const id = randomId(12);
  const token = `mt_${id}.${randomSecret(32)}`;
  const doc: AccessTokenDoc = {
    _id: id,
    tenantId,
    name: input.name,
    role: input.role ?? 'admin',
    userId: input.userId ?? `user_${id}`,
    tokenHash: keyedHash(deps.pepper, token),
    expiresAt: input.expiresAt ? new Date(input.expiresAt) : null,
    createdAt: new Date(),
  };
  await accessTokenModel(deps.db).create(doc);
  return { accessToken: toAccessToken(doc), token };
}

export async function listAccessTokensPage(deps: AccessDeps, tenantId: string, page: number, limit: number) {
  const Model = accessTokenModel(deps.db);
  const [rows, total] = await Promise.all([
    Model.find({ tenantId }, { tokenHash: 0 }).sort({ createdAt: -1, _id: 1 }).skip((page - 1) * limit).limit(limit).lean<AccessTokenDoc[]>(),
    Model.countDocuments({ tenantId }),
  ]);
  return { rows: rows.map(toAccessToken), total };
}

export async function revokeAccessToken(deps: AccessDeps, tenantId: string, id: string) {
  const r = await accessTokenModel(deps.db).deleteOne({ _id: id, tenantId });
  if (!r.deletedCount) throw new AppError('not_found', 'Access token not found');
  deps.announceRevoked({ accessTokenId: id });
}

/** Resolves a management bearer token: the admin token, or a tenant access token. */
export async function resolveBearer(deps: AccessDeps, token: string): Promise<Principal | null> {
  if (safeEqual(token, deps.adminToken)) return { kind: 'admin', via: 'bearer' };
  const m = TOKEN_PATTERN.exec(token);
  if (!m) return null;
  const doc = await accessTokenModel(deps.db).findById(m[1]!).lean<AccessTokenDoc>();
  if (!doc || !safeEqual(doc.tokenHash, keyedHash(deps.pepper, token))) return null;
  if (doc.expiresAt && doc.expiresAt <= new Date()) return null;
  return { kind: 'user', userId: doc.userId, tenantId: doc.tenantId, role: doc.role, via: 'bearer' };
}

export async function resolveSession(deps: AccessDeps, session: string): Promise<Principal | null> {
  if (!/^[A-Za-z0-9_-]{20,100}$/.test(session)) return null;
  const p = await deps.sessions.get(keyedHash(deps.pepper, session));
  if (!p) return null;
  return p.kind === 'admin' || p.kind === 'user' ? { ...p, via: 'cookie' } : null;
}

export async function openSession(deps: AccessDeps, principal: Principal) {
  if (principal.kind !== 'admin' && principal.kind !== 'user') throw new AppError('unauthorized', 'A management credential is required');
  const session = randomSecret(32);
  await deps.sessions.put(keyedHash(deps.pepper, session), principal, deps.sessionTtlSeconds);
  return { session, expiresAt: new Date(Date.now() + deps.sessionTtlSeconds * 1000).toISOString() };
}

export async function closeSession(deps: AccessDeps, session: string) {
  await deps.sessions.remove(keyedHash(deps.pepper, session));
  deps.announceRevoked({ sessionId: sessionId(session) });
}

/** A short-lived run-API token for the playground: HS256 JWT with tenant, project and agent claims. */
export function issuePlaygroundToken(deps: AccessDeps, principal: Principal, tenantId: string, projectId: string, agentId: string) {
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
    const claims = jwt.verify(token, deps.playgroundKey, { algorithms: ['HS256'], issuer: 'platform', audience: 'platform-run' }) as jwt.JwtPayload;
    if (claims.type !== 'playground') return null;
    return { tenantId: String(claims.tid), projectId: String(claims.pid), agentId: String(claims.agentId), subject: String(claims.sub) };
  } catch {
    return null;
  }
}
