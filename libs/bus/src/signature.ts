import { createHmac, timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';

/**
 * The second check of who sent a public operation (docs/security.md, "Who sent a request"). The NATS server already
 * lets only the gateway publish a public operation's subject; on top of that the gateway signs each one it sends
 * (HMAC-SHA256 of the subject and the payload, with the key of the service that owns the operation), and the service
 * serves only requests whose signature its own key confirms. A credential that the permission table wrongly let
 * publish there, or a service that is not the owner, still cannot put a principal on a request.
 */
export const SIGNATURE_HEADER = 'platform-signature';

/**
 * A service's bus key, derived from the credential set's secret (the gateway's key). Here rather than in
 * libs/nats-auth, which writes the keys: every service derives or reads one, and nats-auth's JWT library would cost
 * each of them about 8 MB of memory.
 */
export function deriveBusKey(secret: Buffer, service: string): Buffer {
  return createHmac('sha256', secret).update(`platform-bus-key/${service}`).digest();
}

/** A process's bus key: the gateway's derives every service's key; a service's is its own and checks only its requests. */
export class BusKey {
  private readonly derived = new Map<string, Buffer>();

  private constructor(
    private readonly secret: Buffer,
    /** The service this key belongs to; none for the gateway's key. */
    private readonly service?: string,
  ) {}

  /** The gateway's key: the credential set's secret. */
  static gateway(secret: Buffer): BusKey {
    return new BusKey(secret);
  }

  /** A service's own key. */
  static service(name: string, key: Buffer): BusKey {
    return new BusKey(key, name);
  }

  /** The key that signs (or checks) requests to `service`'s public operations, if this key has it. */
  keyFor(service: string): Buffer | undefined {
    if (this.service !== undefined) return service === this.service ? this.secret : undefined;
    let key = this.derived.get(service);
    if (!key) {
      key = deriveBusKey(this.secret, service);
      this.derived.set(service, key);
    }
    return key;
  }
}

/** A bus key file (`pnpm nats:credentials init` writes one per identity, beside its `.creds`): 32 bytes, base64url. */
export function readBusKeyFile(file: string): Buffer {
  if (!existsSync(file))
    throw new Error(
      `no bus key at ${file} (BUS_KEY_FILE; \`pnpm nats:credentials init\` writes <identity>.key beside <identity>.creds)`,
    );
  const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64url');
  if (key.length !== 32) throw new Error(`${file} is not a bus key (32 bytes, base64url)`);
  return key;
}

/** Where a process's bus key is when BUS_KEY_FILE does not say: beside its `.creds` file, `<identity>.key`. */
export function busKeyFileOf(credsFile: string, busKeyFile?: string): string {
  return busKeyFile ?? credsFile.replace(/\.creds$/, '') + '.key';
}

/** HMAC-SHA256 over the subject and the payload: what a signature is. */
const mac = (key: Buffer, subject: string, payload: string | Uint8Array) =>
  createHmac('sha256', key).update(subject).update('\n').update(payload).digest();

/** The signature of a request, base64url. */
export function signRequest(key: Buffer, subject: string, payload: string | Uint8Array): string {
  return mac(key, subject, payload).toString('base64url');
}

/** Whether `signature` is this key's signature of the request (compared in constant time). */
export function verifyRequest(
  key: Buffer,
  subject: string,
  payload: string | Uint8Array,
  signature: string | undefined,
): boolean {
  if (signature === undefined) return false;
  const given = Buffer.from(signature, 'base64url');
  const expected = mac(key, subject, payload);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
