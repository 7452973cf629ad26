import {
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  SignJWT,
  type JWK,
  type JWTPayload,
  type KeyLike,
} from 'jose';
import type { JwkSet, SigningKey } from '@platform/contracts';
import { getLogger } from '@platform/logger';

export type SigningAlg = 'ES256' | 'EdDSA';

export interface StoredSigningKey {
  kid: string;
  alg: SigningAlg;
  publicJwk: JWK;
  /** The private JWK as JSON, sealed with SecretBox (ENCRYPTION_KEYS), bound to the key's id. */
  sealedPrivateJwk: string;
  createdAt: Date;
}

export interface SigningKeyStore {
  /** Newest first. */
  list(): Promise<StoredSigningKey[]>;
  insert(key: StoredSigningKey): Promise<void>;
  remove(kids: string[]): Promise<void>;
}

/** Seals and opens a private key for the signing key `kid` (it opens for that key only). */
export interface Sealer {
  seal(plaintext: string, kid: string): string;
  open(sealed: string, kid: string): string;
}

const log = getLogger('credential-gateway.signing-keys');

/**
 * Which keys the key set publishes: the newest key (it signs), and each earlier key until its successor has existed
 * for `windowMs` — by then every token it signed has expired (the window covers the token lifetime, the time a replica
 * may keep signing with it before it rereads the keys, and clock skew). `keys` in any order; returns newest first.
 */
export function publishedKeys<K extends { createdAt: Date }>(keys: K[], nowMs: number, windowMs: number): K[] {
  const sorted = [...keys].sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
  return sorted.filter((_k, i) => i === 0 || sorted[i - 1]!.createdAt.getTime() + windowMs > nowMs);
}

export interface KeyringOptions {
  store: SigningKeyStore;
  box: Sealer;
  alg: SigningAlg;
  /** Lifetime of issued tokens. */
  tokenTtlSeconds: number;
  /** How often replicas reread the keys. */
  refreshSeconds: number;
  /** Create a new key when the newest is older than this (0: never by itself). */
  rotationDays: number;
  /** Tells the other replicas a key was created. */
  announce(kid: string): void;
}

interface Signer {
  kid: string;
  alg: SigningAlg;
  key: KeyLike | Uint8Array;
}

/** The gateway's signing keys: rotation, the published key set, and signing with the newest key. */
export function keyring(opts: KeyringOptions) {
  const windowMs = (opts.tokenTtlSeconds + opts.refreshSeconds + 60) * 1000;
  let published: StoredSigningKey[] = [];
  let signer: Signer | undefined;
  let loading: Promise<void> | undefined;

  async function createKey(): Promise<StoredSigningKey> {
    const pair = await generateKeyPair(opts.alg, {
      extractable: true,
      ...(opts.alg === 'EdDSA' ? { crv: 'Ed25519' } : {}),
    });
    const publicJwk = await exportJWK(pair.publicKey);
    const privateJwk = await exportJWK(pair.privateKey);
    const kid = await calculateJwkThumbprint(publicJwk, 'sha256');
    const key: StoredSigningKey = {
      kid,
      alg: opts.alg,
      publicJwk,
      sealedPrivateJwk: opts.box.seal(JSON.stringify(privateJwk), kid),
      createdAt: new Date(),
    };
    await opts.store.insert(key);
    log.info({ kid, alg: opts.alg }, 'signing key created');
    return key;
  }

  async function load(): Promise<void> {
    let keys = await opts.store.list();
    const newest = keys[0];
    const tooOld =
      newest && opts.rotationDays > 0 && newest.createdAt.getTime() < Date.now() - opts.rotationDays * 86_400_000;
    if (!newest || tooOld) {
      await createKey();
      keys = await opts.store.list();
    }
    const now = Date.now();
    const keep = publishedKeys(keys, now, windowMs);
    const head = keep[0]!;
    if (!signer || signer.kid !== head.kid) {
      const privateJwk = JSON.parse(opts.box.open(head.sealedPrivateJwk, head.kid)) as JWK;
      signer = { kid: head.kid, alg: head.alg, key: await importJWK(privateJwk, head.alg) };
    }
    published = keep;
    // Keys no longer published can sign nothing that is still valid: drop them.
    const stale = keys.filter((k) => !keep.includes(k)).map((k) => k.kid);
    if (stale.length) await opts.store.remove(stale);
  }

  const ring = {
    /** Rereads the keys (creating the first, or a due one); concurrent calls share one read. */
    refresh(): Promise<void> {
      loading ??= load().finally(() => (loading = undefined));
      return loading;
    },
    /** Creates a new key that signs from now on; earlier keys stay published for the window. */
    async rotate(): Promise<SigningKey> {
      const key = await createKey();
      // A read that started before the insert would not see the new key: let it finish, then read again.
      await loading?.catch(() => undefined);
      await ring.refresh();
      opts.announce(key.kid);
      return { kid: key.kid, alg: key.alg, createdAt: key.createdAt.toISOString() };
    },
    jwks(): JwkSet {
      return {
        keys: published.map((k) => ({ ...k.publicJwk, kid: k.kid, alg: k.alg, use: 'sig' as const })) as JwkSet['keys'],
      };
    },
    /** Signs a JWT access token (RFC 9068 `typ: at+jwt`) with the newest key. */
    async sign(
      claims: JWTPayload & { iss: string; sub: string; aud: string; iat: number; exp: number; jti: string },
    ): Promise<string> {
      if (!signer) await ring.refresh();
      const s = signer!;
      return new SignJWT(claims).setProtectedHeader({ alg: s.alg, kid: s.kid, typ: 'at+jwt' }).sign(s.key);
    },
  };
  return ring;
}
export type Keyring = ReturnType<typeof keyring>;
