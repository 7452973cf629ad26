import { randomUUID } from 'node:crypto';
import {
  decodeProtectedHeader,
  importSPKI,
  jwtVerify,
  SignJWT,
  errors as joseErrors,
  type JWTPayload,
  type KeyLike,
} from 'jose';
import type { AppForAuth } from '@platform/contracts';

export const ANON_ISSUER = 'platform';
export const ANON_TYPE = 'anonymous';

export interface AnonymousClaims {
  sub: string;
  tid: string;
  pid: string;
  app: string;
  exp: number;
}

/** Signs anonymous session tokens (HS256, pinned on verification) with the configured secret. */
export function anonymousTokens(secret: string, ttlSeconds: number) {
  const key = new TextEncoder().encode(secret);
  return {
    async issue(app: { id: string; tenantId: string; projectId: string }, subject = `anon_${randomUUID()}`) {
      const now = Math.floor(Date.now() / 1000);
      const exp = now + ttlSeconds;
      const token = await new SignJWT({ tid: app.tenantId, pid: app.projectId, app: app.id, type: ANON_TYPE })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(subject)
        .setIssuer(ANON_ISSUER)
        .setIssuedAt(now)
        .setExpirationTime(exp)
        .sign(key);
      return { token, expiresAt: new Date(exp * 1000).toISOString() };
    },
    /** The claims of a valid anonymous token of `appId`, else null (bad signature, other algorithm, expired, other app). */
    async verify(token: string, appId: string): Promise<AnonymousClaims | null> {
      try {
        const { payload } = await jwtVerify(token, key, {
          algorithms: ['HS256'],
          issuer: ANON_ISSUER,
          requiredClaims: ['sub', 'exp'],
        });
        if (
          payload.type !== ANON_TYPE ||
          payload.app !== appId ||
          typeof payload.tid !== 'string' ||
          typeof payload.pid !== 'string'
        )
          return null;
        return { sub: payload.sub!, tid: payload.tid, pid: payload.pid, app: appId, exp: payload.exp! };
      } catch {
        return null;
      }
    },
  };
}
export type AnonymousTokens = ReturnType<typeof anonymousTokens>;

/** The `kid` and `alg` of a compact JWS, or null when it is not one. */
export function tokenHeader(token: string): { kid?: string; alg?: string } | null {
  try {
    const h = decodeProtectedHeader(token);
    return { kid: typeof h.kid === 'string' ? h.kid : undefined, alg: typeof h.alg === 'string' ? h.alg : undefined };
  } catch {
    return null;
  }
}

export type AppJwtFailure = 'unknown_kid' | 'expired' | 'audience' | 'lifetime' | 'future' | 'claims' | 'invalid';

const REGISTERED = new Set(['iss', 'sub', 'aud', 'exp', 'nbf', 'iat', 'jti']);
const keyCache = new Map<string, Promise<KeyLike>>();

function importKey(pem: string, alg: string): Promise<KeyLike> {
  const id = `${alg}\n${pem}`;
  let k = keyCache.get(id);
  if (!k) {
    k = importSPKI(pem, alg);
    keyCache.set(id, k);
    if (keyCache.size > 5000) keyCache.delete(keyCache.keys().next().value!);
  }
  return k;
}

/**
 * Verifies a client JWT against the app's registered keys: the header `kid` picks the key, the algorithm is
 * pinned to the key's (so `none` and HMAC-with-the-public-key are refused), `sub`, `iat` and `exp` are required,
 * `iat` may not lie in the future beyond the clock skew, exp - iat and exp - now are bounded, and `aud` must match when the app sets an audience.
 */
export async function verifyAppJwt(
  token: string,
  app: AppForAuth,
  audience: string | null,
  opts: { clockToleranceSeconds: number; maxLifetimeSeconds: number },
): Promise<{ ok: true; claims: JWTPayload } | { ok: false; reason: AppJwtFailure }> {
  const header = tokenHeader(token);
  const key = header?.kid !== undefined ? app.publicKeys.find((k) => k.kid === header.kid) : undefined;
  if (!key) return { ok: false, reason: 'unknown_kid' };
  try {
    const { payload } = await jwtVerify(token, await importKey(key.publicKey, key.algorithm), {
      algorithms: [key.algorithm],
      clockTolerance: opts.clockToleranceSeconds,
      requiredClaims: ['sub', 'iat', 'exp'],
      ...(audience ? { audience } : {}),
    });
    // A token issued in the future (beyond the clock skew) is refused, and its lifetime is measured from now as well
    // as from iat: a far-future iat would otherwise make any exp pass the lifetime rule.
    const now = Math.floor(Date.now() / 1000);
    if (payload.iat! > now + opts.clockToleranceSeconds) return { ok: false, reason: 'future' };
    if (
      payload.exp! - payload.iat! > opts.maxLifetimeSeconds ||
      payload.exp! - now > opts.maxLifetimeSeconds + opts.clockToleranceSeconds
    )
      return { ok: false, reason: 'lifetime' };
    const custom = Object.fromEntries(Object.entries(payload).filter(([k]) => !REGISTERED.has(k)));
    if (JSON.stringify(custom).length > 1024) return { ok: false, reason: 'claims' };
    return { ok: true, claims: payload };
  } catch (err) {
    if (err instanceof joseErrors.JWTExpired) return { ok: false, reason: 'expired' };
    if (err instanceof joseErrors.JWTClaimValidationFailed && err.claim === 'aud')
      return { ok: false, reason: 'audience' };
    return { ok: false, reason: 'invalid' };
  }
}
