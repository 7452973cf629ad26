import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { SignJWT, type JWTPayload } from 'jose';
import type { Client } from './http';
import { projectPath } from './fixtures';

export type KeyAlgorithm = 'RS256' | 'RS384' | 'RS512' | 'ES256' | 'ES384' | 'ES512' | 'EdDSA';

export interface TestKeyPair {
  algorithm: KeyAlgorithm;
  publicKey: string;
  privateKey: KeyObject;
}

/** A fresh key pair of the kind an algorithm needs (RSA 2048, P-256/384/521, Ed25519). */
export function aKeyPair(algorithm: KeyAlgorithm): TestKeyPair {
  const pair = algorithm.startsWith('RS')
    ? generateKeyPairSync('rsa', { modulusLength: 2048 })
    : algorithm === 'EdDSA'
      ? generateKeyPairSync('ed25519')
      : generateKeyPairSync('ec', {
          namedCurve: { ES256: 'P-256', ES384: 'P-384', ES512: 'P-521' }[algorithm as 'ES256'],
        });
  return {
    algorithm,
    publicKey: pair.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    privateKey: pair.privateKey,
  };
}

/** Creates an app through the API (a web_client app for example.com unless told). */
export async function anApp(
  admin: Client,
  p: { tenantId: string; projectId: string },
  overrides: Record<string, unknown> = {},
) {
  const type = (overrides.type as string | undefined) ?? 'web_client';
  const config =
    type === 'web_client'
      ? { type, webClient: { allowAnonymous: true, allowedDomains: ['app.example.com'], audience: 'platform-run' } }
      : { type };
  const res = await admin.post(`${projectPath(p)}/apps`, {
    name: 'test app',
    type,
    config,
    defaultAgentId: 'agent-1',
    ...overrides,
  });
  if (res.status !== 201) throw new Error(`creating an app failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data.app as { id: string; type: string; config: any; [k: string]: unknown };
}

/** Registers a key pair under an app and returns it. */
export async function anAppKey(
  admin: Client,
  p: { tenantId: string; projectId: string },
  appId: string,
  algorithm: KeyAlgorithm = 'ES256',
  kid = `kid-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`,
) {
  const pair = aKeyPair(algorithm);
  const res = await admin.post(`${projectPath(p)}/apps/${appId}/auth/keys`, {
    kid,
    algorithm,
    publicKey: pair.publicKey,
  });
  if (res.status !== 201) throw new Error(`adding an app key failed: ${res.status} ${JSON.stringify(res.body)}`);
  return { ...pair, kid };
}

/** Signs a client JWT as an app backend would (sub, iat, exp 10 minutes unless told). */
export async function signAppJwt(
  key: { privateKey: KeyObject; algorithm: string; kid?: string },
  claims: JWTPayload = {},
  opts: { expiresIn?: string | number; audience?: string; subject?: string; header?: Record<string, unknown> } = {},
): Promise<string> {
  const jwt = new SignJWT({ ...claims })
    .setProtectedHeader({
      alg: key.algorithm,
      typ: 'JWT',
      ...(key.kid ? { kid: key.kid } : {}),
      ...(opts.header ?? {}),
    })
    .setSubject(opts.subject ?? 'user-1')
    .setIssuedAt(typeof claims.iat === 'number' ? claims.iat : undefined);
  if (opts.audience) jwt.setAudience(opts.audience);
  jwt.setExpirationTime(typeof claims.exp === 'number' ? claims.exp : (opts.expiresIn ?? '10m'));
  return jwt.sign(key.privateKey);
}
