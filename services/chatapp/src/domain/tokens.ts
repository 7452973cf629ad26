import jwt from 'jsonwebtoken';
import { randomId } from '@platform/secrets';

/**
 * Signed, expiring, one-time tokens of the chat-app integration: HS256 JWTs under the state secret, told apart
 * by their audience. One-time use is enforced by the caller (claim `jti` in the nonce store).
 *
 * - install state (`chatapp:install-state`, 10 minutes): {tid, pid?, webhook}
 * - link token (`chatapp:link`): a chat user asks to link; claims {tid, team, sub = chat user id, name?, email?}
 * - link session (`chatapp:link-session`): a platform user asks to link; claims {tid, sub = platform user id, email?, name?}
 * - install link (`chatapp:install-link`): an authenticated caller of a tenant asks to install; claims {tid, pid, wh}
 */
export const ISSUER = 'platform-chatapp';
export const AUD = {
  state: 'chatapp:install-state',
  link: 'chatapp:link',
  session: 'chatapp:link-session',
  installLink: 'chatapp:install-link',
} as const;
export type TokenKind = keyof typeof AUD;

export type TokenProblem = 'malformed' | 'bad_signature' | 'expired';

export interface VerifiedToken<C> {
  claims: C & { jti: string; exp: number };
}

export function signToken(
  secret: string,
  kind: TokenKind,
  claims: Record<string, unknown>,
  ttlSeconds: number,
): { token: string; jti: string; expiresAt: Date } {
  const jti = randomId(24);
  const token = jwt.sign(claims, secret, {
    algorithm: 'HS256',
    audience: AUD[kind],
    issuer: ISSUER,
    expiresIn: ttlSeconds,
    jwtid: jti,
  });
  const decoded = jwt.decode(token) as { exp: number };
  return { token, jti, expiresAt: new Date(decoded.exp * 1000) };
}

/**
 * Verifies signature, audience and expiry under any of `secrets` (the state key and, during a rotation of the sealing
 * keys it derives from, the earlier ones); answers what is wrong instead of throwing.
 */
export function verifyToken<C>(
  secrets: string | readonly string[],
  kind: TokenKind,
  token: string,
): VerifiedToken<C> | { problem: TokenProblem } {
  for (const secret of typeof secrets === 'string' ? [secrets] : secrets) {
    const verified = verifyUnder<C>(secret, kind, token);
    if (!('problem' in verified) || verified.problem !== 'bad_signature') return verified;
  }
  return { problem: 'bad_signature' };
}

function verifyUnder<C>(secret: string, kind: TokenKind, token: string): VerifiedToken<C> | { problem: TokenProblem } {
  try {
    const claims = jwt.verify(token, secret, { algorithms: ['HS256'], audience: AUD[kind], issuer: ISSUER }) as C & {
      jti?: string;
      exp?: number;
    };
    if (typeof claims !== 'object' || !claims.jti || typeof claims.exp !== 'number') return { problem: 'malformed' };
    return { claims: claims as C & { jti: string; exp: number } };
  } catch (err) {
    if (err instanceof jwt.TokenExpiredError) return { problem: 'expired' };
    const msg = (err as Error).message ?? '';
    if (/signature/i.test(msg)) return { problem: 'bad_signature' };
    return { problem: 'malformed' };
  }
}

export const secondsLeft = (exp: number) => Math.max(1, exp - Math.floor(Date.now() / 1000)) + 60;
