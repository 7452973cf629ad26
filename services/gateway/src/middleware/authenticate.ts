import type { Request } from 'express';
import { parseCookie } from 'cookie';
import type { NatsConnection } from 'nats';
import {
  type AnyOperation,
  authenticateRun,
  credentialRevoked,
  permissionRole,
  type Principal,
  resolveManageCredential,
  roleRank,
  verifyAnalyticsKey,
} from '@platform/contracts';
import { sessionId } from '@platform/secrets';
import { type ServiceBus, subscribeNotice } from '@platform/bus';
import { AppError } from '@platform/problems';
import { credentialHash } from './auth-lockout';

/** Reads `Authorization: Bearer <token>`. */
export function bearerToken(req: Request): string | undefined {
  const h = req.headers.authorization;
  if (!h) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  return m?.[1];
}

/** The named cookie of the request (a malformed %-escape is taken as sent: it will not verify, never a 500). */
export function cookieValue(req: Request, name: string): string | undefined {
  return req.headers.cookie ? parseCookie(req.headers.cookie)[name] : undefined;
}

const unauthorized = (detail: string) =>
  new AppError('unauthorized', detail, { headers: { 'www-authenticate': 'Bearer' } });

interface CacheEntry {
  principal: Principal;
  at: number;
  expiresAt?: number;
  credentialIds?: string[];
}

/** The kinds of credential, as cache key prefixes: manage bearer, session cookie, run token, analytics key. */
type CredentialKind = 'b' | 's' | 'r' | 'a';

/** A credential's cache key: its kind and SHA-256 (the request's digest, computed once for it). */
const keyOf = (kind: string, token: string, req?: Request) => `${kind}:${credentialHash(token, req)}`;

/**
 * What one verification found: the principal (null: not valid) and whether, under which credential ids, to remember
 * it (a session is remembered under its own id and its access token's: revoking either drops it).
 */
interface Verified {
  principal: Principal | null;
  remember: boolean;
  credentialIds?: (string | undefined)[];
}

/** When a principal's credential stops working, if it says (a run token, an access token or a session). */
const expiryOf = (p: Principal) =>
  (p.kind === 'run' || p.kind === 'user') && p.expiresAt ? Date.parse(p.expiresAt) : undefined;

/**
 * Principals of credentials verified lately, for `ttlMs` (a run token also until it expires), found by credential id
 * too so a revocation can drop them.
 *
 * `through` verifies a credential at most once at a time: the requests that find it missing wait for the same answer
 * (when a key's entry expired, every request in flight with it used to ask the verifying service at once: 50 requests
 * over 20 ms each, every 10 s, in pnpm bench). And an entry past half its time is verified again in the background while
 * it still answers, so a key in steady use is never missing; no entry answers past `ttlMs`, so a revocation whose
 * announcement was lost still takes effect within it. A revocation (or a cleared cache) during a verification keeps
 * that verification's answer out of the cache.
 */
function principalCache(ttlMs: number) {
  const cache = new Map<string, CacheEntry>();
  const byCredential = new Map<string, Set<string>>();
  const verifying = new Map<string, Promise<Principal | null>>();
  /** Bumped by every revocation and clear: a verification that began before one is not remembered. */
  let generation = 0;
  const remember = (key: string, principal: Principal, credentialIds: (string | undefined)[] = []) => {
    if (ttlMs <= 0) return;
    const ids = credentialIds.filter((id): id is string => Boolean(id));
    cache.set(key, { principal, at: Date.now(), expiresAt: expiryOf(principal), credentialIds: ids });
    for (const credentialId of ids) {
      let set = byCredential.get(credentialId);
      if (!set) byCredential.set(credentialId, (set = new Set()));
      set.add(key);
    }
    if (cache.size > 50_000) {
      const first = cache.keys().next().value;
      if (first !== undefined) cache.delete(first);
    }
  };
  const entry = (key: string): CacheEntry | undefined => {
    const hit = cache.get(key);
    if (!hit) return undefined;
    const now = Date.now();
    if (now - hit.at > ttlMs || (hit.expiresAt !== undefined && hit.expiresAt <= now)) {
      cache.delete(key);
      return undefined;
    }
    return hit;
  };
  const verifyOnce = (key: string, verify: () => Promise<Verified>): Promise<Principal | null> => {
    const pending = verifying.get(key);
    if (pending) return pending;
    const startedAt = generation;
    const done = verify()
      .then((v) => {
        if (v.remember && v.principal && startedAt === generation) remember(key, v.principal, v.credentialIds);
        else cache.delete(key);
        return v.principal;
      })
      .finally(() => verifying.delete(key));
    verifying.set(key, done);
    return done;
  };
  return {
    /** The principal of a credential: remembered, or verified by `verify` (once for all who ask at the same time). */
    async through(key: string, verify: () => Promise<Verified>): Promise<Principal | null> {
      const hit = entry(key);
      if (!hit) return verifyOnce(key, verify);
      if (Date.now() - hit.at > ttlMs / 2 && !verifying.has(key)) {
        verifyOnce(key, verify).catch((err: unknown) => {
          // Refused now (revoked, expired): forgotten at once. Unreachable: the entry answers until its time is up.
          if (err instanceof AppError && err.status < 500) cache.delete(key);
        });
      }
      return hit.principal;
    },
    cached(key: string): Principal | undefined {
      return entry(key)?.principal;
    },
    forget(credentialId: string) {
      generation++;
      for (const k of byCredential.get(credentialId) ?? []) cache.delete(k);
      byCredential.delete(credentialId);
    },
    clear() {
      generation++;
      cache.clear();
    },
  };
}
type PrincipalCache = ReturnType<typeof principalCache>;

/** Drops the cached principals of every credential a revocation on the bus names (all of them if it is unreadable). */
function dropRevoked(nc: NatsConnection, cache: PrincipalCache) {
  // A callback: the revocation is applied as it is read off the connection, before anything read after it.
  return subscribeNotice(
    nc,
    credentialRevoked,
    'gateway',
    (r) => {
      for (const id of [r.apiKeyId, r.accessTokenId, r.sessionId, r.analyticsKeyId]) if (id) cache.forget(id);
    },
    { onInvalid: () => cache.clear() },
  );
}

interface ResolverDeps {
  bus: ServiceBus;
  cache: PrincipalCache;
  onVerified?: (credential: { kind: string; token: string }) => void;
}

/** The id a management credential is known by (access token id, session id); never the secret. */
function manageCredentialId(cred: { bearer?: string; session?: string }): string | undefined {
  return cred.bearer?.startsWith('mt_') ? cred.bearer.slice(3, 15) : cred.session ? sessionId(cred.session) : undefined;
}

/**
 * The id of the credential a request was authenticated with, for the audit trail: a management token's or session's
 * id, `admin-token` for the platform admin's bearer token, a run principal's API key id.
 */
function credentialIdOf(op: AnyOperation, req: Request, cookieName: string, principal: Principal): string | undefined {
  const c = credentialOf(op, req, cookieName);
  if (!c) return undefined;
  if (c.kind === 's') return manageCredentialId({ session: c.token });
  if (c.kind === 'b')
    return manageCredentialId({ bearer: c.token }) ?? (principal.kind === 'admin' ? 'admin-token' : undefined);
  if (principal.kind === 'run') return principal.apiKeyId;
  return principal.kind === 'analytics' ? principal.keyId : undefined;
}

/** A management bearer token or a session cookie, verified by management; null when it is not valid. */
function resolveManage(
  { bus, cache, onVerified }: ResolverDeps,
  cred: { bearer?: string; session?: string },
  requestId: string,
  req?: Request,
): Promise<Principal | null> {
  const key = cred.bearer ? keyOf('b', cred.bearer, req) : keyOf('s', cred.session!, req);
  return cache.through(key, async () => {
    const { principal } = await bus.callInternal(resolveManageCredential, cred, { requestId });
    if (!principal) return { principal, remember: false };
    onVerified?.(cred.bearer ? { kind: 'b', token: cred.bearer } : { kind: 's', token: cred.session! });
    return {
      principal,
      remember: true,
      credentialIds: [manageCredentialId(cred), principal.kind === 'user' ? principal.accessTokenId : undefined],
    };
  });
}

/** An API key or app token of the run API, verified by run-auth. */
async function resolveRun(
  { bus, cache, onVerified }: ResolverDeps,
  req: Request,
  token: string,
  requestId: string,
): Promise<Principal> {
  const appId = typeof req.headers['x-app-id'] === 'string' ? req.headers['x-app-id'] : undefined;
  const origin = typeof req.headers.origin === 'string' ? req.headers.origin : undefined;
  const verify = async (): Promise<Verified> => {
    const { principal } = await bus.callInternal(authenticateRun, { token, appId, origin }, { requestId });
    if (principal.kind !== 'run') return { principal, remember: false };
    onVerified?.({ kind: 'r', token });
    return { principal, remember: true, credentialIds: [principal.apiKeyId] };
  };
  // App JWTs depend on the origin and app; only API keys are cached by token alone.
  if (!token.startsWith('sk_')) return (await verify()).principal!;
  return (await cache.through(keyOf('r', token, req), verify))!;
}

/** Analytics keys (`ak_…`) are verified by the analytics service and cached like API keys. */
async function resolveAnalytics(
  { bus, cache, onVerified }: ResolverDeps,
  token: string,
  requestId: string,
  req?: Request,
): Promise<Principal> {
  const principal = await cache.through(keyOf('a', token, req), async () => {
    const { principal: found } = await bus.callInternal(verifyAnalyticsKey, { key: token }, { requestId });
    if (found.kind !== 'analytics') throw unauthorized('The analytics key is invalid or revoked');
    onVerified?.({ kind: 'a', token });
    return { principal: found, remember: true, credentialIds: [found.keyId] };
  });
  return principal!;
}

/** The credential `authenticate` would verify for this operation (undefined when none is presented). */
function credentialOf(
  op: AnyOperation,
  req: Request,
  cookieName: string,
): { kind: CredentialKind; token: string } | undefined {
  const bearer = bearerToken(req);
  const session = cookieValue(req, cookieName);
  switch (op.auth) {
    case 'none':
      return undefined;
    case 'run':
      return bearer ? { kind: 'r', token: bearer } : undefined;
    case 'analytics':
      return bearer ? { kind: 'a', token: bearer } : undefined;
    case 'cookie':
      return session ? { kind: 's', token: session } : undefined;
    case 'manage':
      return bearer ? { kind: 'b', token: bearer } : session ? { kind: 's', token: session } : undefined;
    case 'bearer':
    case 'admin':
      return bearer ? { kind: 'b', token: bearer } : undefined;
  }
}

/** The bearer, admin and manage schemes: a management bearer token, or (manage only) a session cookie. */
async function authenticateManage(
  deps: ResolverDeps,
  op: AnyOperation,
  req: Request,
  bearer: string | undefined,
  session: string | undefined,
  requestId: string,
): Promise<Principal> {
  let p: Principal | null = null;
  if (bearer) {
    p = await resolveManage(deps, { bearer }, requestId, req);
    if (!p) throw unauthorized('The bearer token is invalid, expired or revoked');
  } else if (session && op.auth === 'manage') {
    p = await resolveManage(deps, { session }, requestId, req);
    if (!p) throw unauthorized('The session is invalid or has expired');
  } else {
    throw unauthorized(op.auth === 'manage' ? 'Send a bearer token or a session cookie' : 'Send a bearer token');
  }
  if (op.auth === 'admin' && p.kind !== 'admin') throw new AppError('forbidden', 'Only the platform admin may do this');
  return p;
}

/** Who is calling, by the operation's auth scheme; throws 401 when a required credential is missing or bad. */
async function authenticate(
  deps: ResolverDeps,
  cookieName: string,
  op: AnyOperation,
  req: Request,
  requestId: string,
): Promise<Principal> {
  const bearer = bearerToken(req);
  const session = cookieValue(req, cookieName);
  switch (op.auth) {
    case 'none':
      return { kind: 'anonymous' };
    case 'run': {
      if (!bearer)
        throw unauthorized('Authentication failed: send an API key or token as Authorization: Bearer <credential>');
      return resolveRun(deps, req, bearer, requestId);
    }
    case 'cookie': {
      if (!session) throw unauthorized(`This operation needs a session cookie (${cookieName})`);
      const p = await resolveManage(deps, { session }, requestId, req);
      if (!p) throw unauthorized('The session is invalid or has expired');
      return p;
    }
    case 'bearer':
    case 'admin':
    case 'manage':
      return authenticateManage(deps, op, req, bearer, session, requestId);
    case 'analytics': {
      if (!bearer) throw unauthorized('Authentication failed: send an analytics key as Authorization: Bearer ak_…');
      return resolveAnalytics(deps, bearer, requestId, req);
    }
  }
}

/** The tenant check alone, on the raw path parameters (before the input is validated). */
function authorizeTenant(op: AnyOperation, principal: Principal, params: Record<string, unknown>): void {
  if (principal.kind !== 'user' || op.auth === 'none' || op.auth === 'run') return;
  const tenantId = params.tenantId;
  if (typeof tenantId === 'string' && tenantId !== principal.tenantId) {
    throw new AppError('forbidden', 'This credential has no access to that tenant');
  }
}

/** Tenant isolation and role checks for management-style principals. */
function authorize(op: AnyOperation, principal: Principal, params: Record<string, unknown>): void {
  if (principal.kind === 'admin' || op.auth === 'none' || op.auth === 'run') return;
  // An analytics key is scoped to its project by the analytics service itself (it compares body and key).
  if (op.auth === 'analytics' && principal.kind === 'analytics') return;
  if (principal.kind !== 'user') throw new AppError('forbidden', 'This credential cannot be used here');
  const tenantId = params.tenantId;
  if (typeof tenantId === 'string' && tenantId !== principal.tenantId) {
    throw new AppError('forbidden', 'This credential has no access to that tenant');
  }
  const needed = op.permission ? permissionRole[op.permission] : 'viewer';
  if (roleRank[principal.role] < roleRank[needed]) {
    throw new AppError('forbidden', `This operation needs the ${needed} role or higher`);
  }
}

/**
 * Authenticates requests by the operation's scheme. Verified credentials are remembered for a short time;
 * a revocation announced on the bus drops them at once, and an expiry is checked on every hit.
 */
export function authenticator(
  bus: ServiceBus,
  nc: NatsConnection,
  opts: { cookieName: string; ttlMs: number; onVerified?: (credential: { kind: string; token: string }) => void },
) {
  const cache = principalCache(opts.ttlMs);
  const sub = dropRevoked(nc, cache);
  const deps: ResolverDeps = { bus, cache, onVerified: opts.onVerified };
  return {
    authenticate: (op: AnyOperation, req: Request, requestId: string) =>
      authenticate(deps, opts.cookieName, op, req, requestId),
    credentialOf: (op: AnyOperation, req: Request) => credentialOf(op, req, opts.cookieName),
    credentialIdOf: (op: AnyOperation, req: Request, principal: Principal) =>
      credentialIdOf(op, req, opts.cookieName, principal),
    /** Whether this gateway verified the credential lately (it is in the cache), without asking anyone. */
    knows(op: AnyOperation, req: Request): boolean {
      const c = credentialOf(op, req, opts.cookieName);
      return c !== undefined && cache.cached(keyOf(c.kind, c.token, req)) !== undefined;
    },
    authorize,
    authorizeTenant,
    /** Forgets every verified credential (a project's erasure deletes its keys without revoking them one by one). */
    forgetAll() {
      cache.clear();
    },
    stop() {
      sub.unsubscribe();
    },
  };
}
export type Authenticator = ReturnType<typeof authenticator>;
