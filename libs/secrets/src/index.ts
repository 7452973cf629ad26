import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

// Ids are drawn from a pool of CSPRNG bytes refilled 8 KiB at a time (one system call per few hundred ids instead of
// one per id, which showed in the gateway's profile); every byte is used once.
const POOL_SIZE = 8192;
let pool = Buffer.alloc(0);
let poolAt = 0;
function nextByte(): number {
  if (poolAt >= pool.length) {
    pool = randomBytes(POOL_SIZE);
    poolAt = 0;
  }
  return pool[poolAt++]!;
}

/** Random string over [0-9A-Za-z] (rejection sampling: no modulo bias). */
export function randomId(length = 16): string {
  let out = '';
  while (out.length < length) {
    const b = nextByte();
    if (b < 248) out += BASE62[b % 62];
  }
  return out;
}

export function randomSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** A keyed hash for high-entropy secrets (API keys, tokens): as safe as a KDF for 256-bit secrets, and fast. */
export function keyedHash(pepper: string, value: string): string {
  return createHmac('sha256', pepper).update(value).digest('base64url');
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

/** The public id of a browser session: SHA-256 (base64url) of the cookie value, so revocations can name it without the secret. */
export function sessionId(sessionValue: string): string {
  return createHash('sha256').update(sessionValue).digest('base64url');
}

export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

/**
 * The record a sealed value belongs to. It is the value's associated data (AES-GCM authenticates it without storing it),
 * so the value opens only for that record: copied onto another record, another collection or another tenant's record,
 * it fails to open.
 */
export interface SealedBinding {
  /** The record's tenant; null for records of the platform itself (the credential gateway's signing keys). */
  tenantId: string | null;
  /** The collection the record is stored in. */
  collection: string;
  /** The record's id in that collection (with its project where ids are unique per project only). */
  recordId: string;
}

/** Why a sealed value did not open. The message names the record and the key id, never the value. */
export class SealedValueError extends Error {
  constructor(
    readonly reason: 'malformed' | 'unknown_key' | 'not_this_record' | 'no_key_opens' | 'unbound',
    message: string,
  ) {
    super(message);
    this.name = 'SealedValueError';
  }
}

const FORMAT = 'v2';
const LEGACY_FORMAT = 'v1';

interface SealingKey {
  id: string;
  key: Buffer;
  secret: string;
}

/** A key as configured (any text of at least 16 characters) becomes an AES-256 key: its SHA-256. */
function sealingKey(secret: string): SealingKey {
  if (!secret || secret.length < 16) throw new Error('encryption key must be at least 16 characters');
  const key = createHash('sha256').update(secret).digest();
  // The key's public id: a keyed hash of it, short; it tells which key sealed a value without revealing the key.
  const id = createHmac('sha256', key)
    .update('platform sealed-value key id')
    .digest()
    .subarray(0, 6)
    .toString('base64url');
  return { id, key, secret };
}

const aadOf = (b: SealedBinding) => Buffer.from(JSON.stringify([b.tenantId, b.collection, b.recordId]), 'utf8');
const describe = (b: SealedBinding) => `tenant ${b.tenantId ?? '(platform)'}, ${b.collection} ${b.recordId}`;

/**
 * Secrets sealed at rest: AES-256-GCM under a list of keys, newest first (ENCRYPTION_KEYS). The newest key seals; every
 * key of the list opens. A value is bound to its record (`SealedBinding`, the associated data) and names the key that
 * sealed it: `v2.<key id>.<iv>.<tag>.<ciphertext>` (base64url). Values of the format before (`v1.<iv>.<tag>.<ciphertext>`,
 * bound to nothing) still open under any key of the list until `pnpm secrets:reencrypt` seals them again.
 */
export class SecretBox {
  private readonly keys: SealingKey[];

  /**
   * `keys`: newest first (one key: a string). `acceptUnbound: false` refuses values of the format before bindings
   * (once they have all been sealed again, a `v1` value in a record can only have been put there from elsewhere).
   */
  constructor(
    keys: string | readonly string[],
    private readonly options: { acceptUnbound?: boolean } = {},
  ) {
    const list = typeof keys === 'string' ? [keys] : [...keys];
    if (!list.length) throw new Error('at least one encryption key is needed');
    this.keys = list.map(sealingKey);
    const ids = new Set(this.keys.map((k) => k.id));
    if (ids.size !== this.keys.length) throw new Error('the encryption keys must differ from each other');
  }

  /** The ids of the keys, newest first (the first seals). */
  get keyIds(): string[] {
    return this.keys.map((k) => k.id);
  }

  /**
   * A secret for `purpose` derived from each key (a keyed hash of the key as configured), newest first: other keys a
   * service needs (the chat app's state key, the credential gateway's key rings) follow the sealing keys this way.
   */
  derivedSecrets(purpose: string): string[] {
    return this.keys.map((k) => keyedHash(k.secret, purpose));
  }

  seal(plaintext: string, binding: SealedBinding): string {
    const { id, key } = this.keys[0]!;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(aadOf(binding));
    const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [
      FORMAT,
      id,
      iv.toString('base64url'),
      cipher.getAuthTag().toString('base64url'),
      ct.toString('base64url'),
    ].join('.');
  }

  /** The plaintext of a value sealed for `binding`; a `SealedValueError` says why it does not open. */
  open(sealed: string, binding: SealedBinding): string {
    const parts = sealed.split('.');
    if (parts[0] === LEGACY_FORMAT && parts.length === 4) {
      if (this.options.acceptUnbound === false) {
        throw new SealedValueError(
          'unbound',
          `the value stored for ${describe(binding)} is in the format before bindings (v1), which ENCRYPTION_ACCEPT_UNBOUND=false refuses`,
        );
      }
      return this.openLegacy(parts as [string, string, string, string], binding);
    }
    const [v, kid, iv, tag, ct] = parts;
    if (v !== FORMAT || parts.length !== 5 || !kid || !iv || !tag || ct === undefined) {
      throw new SealedValueError('malformed', `the value stored for ${describe(binding)} is not a sealed value`);
    }
    const key = this.keys.find((k) => k.id === kid);
    if (!key) {
      throw new SealedValueError(
        'unknown_key',
        `the value stored for ${describe(binding)} was sealed under key ${kid}, which is not in ENCRYPTION_KEYS`,
      );
    }
    try {
      return decrypt(key.key, iv, tag, ct, aadOf(binding));
    } catch {
      throw new SealedValueError(
        'not_this_record',
        `the value stored for ${describe(binding)} was not sealed for this record (it was copied from another record, or damaged)`,
      );
    }
  }

  /** The id of the key that sealed `sealed` (null for the format before, which names none). */
  keyIdOf(sealed: string): string | null {
    const parts = sealed.split('.');
    return parts[0] === FORMAT && parts.length === 5 ? (parts[1] ?? null) : null;
  }

  /** True when `sealed` is in today's format under the newest key: re-encryption leaves it as it is. */
  isCurrent(sealed: string): boolean {
    return this.keyIdOf(sealed) === this.keys[0]!.id;
  }

  /** Opens `sealed` (any key of the list, either format) and seals it again under the newest key, bound to `binding`. */
  reseal(sealed: string, binding: SealedBinding): string {
    return this.seal(this.open(sealed, binding), binding);
  }

  private openLegacy([, iv, tag, ct]: [string, string, string, string], binding: SealedBinding): string {
    for (const { key } of this.keys) {
      try {
        return decrypt(key, iv, tag, ct);
      } catch {
        // another key of the list may have sealed it
      }
    }
    throw new SealedValueError(
      'no_key_opens',
      `the value stored for ${describe(binding)} (format v1) opens under no key of ENCRYPTION_KEYS`,
    );
  }
}

function decrypt(key: Buffer, iv: string, tag: string, ct: string, aad?: Buffer): string {
  // A full 16-byte tag only: a shortened one would make forgeries cheap.
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'), { authTagLength: 16 });
  if (aad) decipher.setAAD(aad);
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
}
