import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { deriveBusKey } from '@platform/bus';
import {
  Algorithms,
  createAccount,
  createOperator,
  createUser,
  decode,
  encodeAccount,
  encodeOperator,
  encodeUser,
  fmtCreds,
  fromSeed,
  type KeyPair,
  type User,
} from '@nats-io/jwt';

/**
 * NATS decentralized authentication for the platform (docs/security.md, "The message bus"): one operator, the system
 * account and one account (PLATFORM) that holds every stream. Each process connects as a user of PLATFORM whose JWT
 * carries its permissions; the server checks the JWT's signature chain (user <- account <- operator) and enforces the
 * permissions. The state (the three seeds and the revocation list) lives in one file, readable by its owner only.
 */

/** What one identity may do on the bus (NATS user permissions). */
export interface BusPermission {
  publish: string[];
  subscribe: string[];
  /** May answer requests it received (NATS `allow_responses`: one reply per request, to the request's reply subject). */
  allowResponses: boolean;
}

/** The permission table: identity name -> permissions (deploy/nats/permissions.json). */
export interface PermissionTable {
  identities: Record<string, BusPermission>;
}

interface AuthState {
  operatorSeed: string;
  systemSeed: string;
  accountSeed: string;
  /** Revoked user public keys -> revocation time (seconds): a user JWT issued at or before it is refused. */
  revocations: Record<string, number>;
  /**
   * The operator and system account JWTs, made once: a server refuses a reload whose operator JWT differs from the one
   * it started with, so only the account JWT (revocations) is made anew.
   */
  operatorJwt?: string;
  systemJwt?: string;
  /**
   * The request-signing secret (base64url, 32 bytes): the gateway's bus key, from which each service's key is derived
   * (`deriveBusKey`). Made the first time it is needed.
   */
  busSecret?: string;
}

const STATE_FILE = 'state.json';
const enc = new TextEncoder();
const dec = new TextDecoder();

function seedOf(kp: KeyPair): string {
  return dec.decode(kp.getSeed());
}

function writePrivate(file: string, content: string | Uint8Array): void {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, content, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file);
}

function readState(dir: string): AuthState | undefined {
  const file = join(dir, STATE_FILE);
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as AuthState;
}

/** The state of `dir`, made (new operator, system account and account keys) when there is none yet. */
export function loadOrCreateState(dir: string): AuthState {
  const found = readState(dir);
  if (found) return found;
  const state: AuthState = {
    operatorSeed: seedOf(createOperator()),
    systemSeed: seedOf(createAccount()),
    accountSeed: seedOf(createAccount()),
    revocations: {},
  };
  writePrivate(join(dir, STATE_FILE), JSON.stringify(state, null, 2));
  return state;
}

function requireState(dir: string): AuthState {
  const state = readState(dir);
  if (!state) throw new Error(`no NATS credentials state in ${dir}: run "pnpm nats:credentials init" first`);
  return state;
}

const kp = (seed: string) => fromSeed(enc.encode(seed));

/** The account's public key (the `aid` every platform user belongs to). */
export function accountPublicKey(dir: string): string {
  return kp(requireState(dir).accountSeed).getPublicKey();
}

/**
 * The server's authentication settings: the operator JWT, the system account and both account JWTs preloaded (the
 * MEMORY resolver: no account server to run; a revocation is a new account JWT and a reload).
 */
export async function serverAuthConfig(dir: string): Promise<string> {
  const state = requireState(dir);
  const operator = kp(state.operatorSeed);
  const system = kp(state.systemSeed);
  const account = kp(state.accountSeed);
  const sysPub = system.getPublicKey();
  if (!state.operatorJwt || !state.systemJwt) {
    state.operatorJwt = await encodeOperator('platform', operator, { system_account: sysPub });
    state.systemJwt = await encodeAccount('SYS', system, {}, { signer: operator });
    writePrivate(join(dir, STATE_FILE), JSON.stringify(state, null, 2));
  }
  const { operatorJwt, systemJwt } = state;
  const accountJwt = await encodeAccount(
    'PLATFORM',
    account,
    {
      // JetStream is on for the account, without limits of its own (the server's limits apply).
      limits: {
        mem_storage: -1,
        disk_storage: -1,
        streams: -1,
        consumer: -1,
        subs: -1,
        data: -1,
        payload: -1,
        conn: -1,
        leaf: -1,
        imports: -1,
        exports: -1,
        wildcards: true,
      },
      revocations: state.revocations,
    },
    { signer: operator },
  );
  return [
    '# Generated by `pnpm nats:credentials` (libs/nats-auth): decentralized JWT authentication. Do not edit.',
    `operator: ${operatorJwt}`,
    `system_account: ${sysPub}`,
    'resolver: MEMORY',
    'resolver_preload: {',
    `  ${sysPub}: ${systemJwt}`,
    `  ${account.getPublicKey()}: ${accountJwt}`,
    '}',
    '',
  ].join('\n');
}

function natsPermissions(p: BusPermission): Partial<User> {
  return {
    pub: { allow: p.publish, deny: [] },
    sub: { allow: p.subscribe, deny: [] },
    ...(p.allowResponses ? { resp: { max: 1, ttl: 0 } } : {}),
  };
}

export interface IssuedCredential {
  /** The `.creds` file's content (user JWT and seed), as the `nats` CLI and nats.js's credsAuthenticator read it. */
  creds: string;
  /** The user's public key: what a revocation names. */
  publicKey: string;
  name: string;
}

/** A user of the platform account with these permissions; `expiresInS` ends it (default: until revoked). */
export async function issueUser(
  dir: string,
  name: string,
  permission: BusPermission,
  opts: { expiresInS?: number; tags?: string[] } = {},
): Promise<IssuedCredential> {
  const state = requireState(dir);
  const user = createUser();
  const jwt = await encodeUser(
    name,
    user,
    kp(state.accountSeed),
    { ...natsPermissions(permission), ...(opts.tags ? { tags: opts.tags } : {}) },
    { algorithm: Algorithms.v2, ...(opts.expiresInS ? { exp: Math.floor(Date.now() / 1000) + opts.expiresInS } : {}) },
  );
  return { creds: dec.decode(fmtCreds(jwt, user)), publicKey: user.getPublicKey(), name };
}

/** The user JWT of a `.creds` file, decoded (name, public key, issue time). */
export function readCreds(text: string): { name: string; publicKey: string; issuedAt: number; account: string } {
  const m = /-----BEGIN NATS USER JWT-----\s*([^\s-][^\n]*)\s*-+END NATS USER JWT-+/.exec(text);
  if (!m?.[1]) throw new Error('not a NATS .creds file (no user JWT)');
  const claims = decode<User>(m[1].trim());
  return { name: claims.name, publicKey: claims.sub, issuedAt: claims.iat, account: claims.iss };
}

/**
 * Revokes a user: every JWT of that public key issued up to now is refused, and its connections are closed once the
 * server has the new account JWT (`serverAuthConfig` again, then a reload).
 */
export function revokeUser(dir: string, publicKey: string): void {
  if (!/^U[A-Z2-7]{55}$/.test(publicKey)) throw new Error(`not a NATS user public key: ${publicKey}`);
  const state = requireState(dir);
  // The server compares the JWT's issue time (seconds) with this: one second later covers a JWT issued this second.
  state.revocations[publicKey] = Math.floor(Date.now() / 1000) + 1;
  writePrivate(join(dir, STATE_FILE), JSON.stringify(state, null, 2));
}

export { writePrivate };

/** Where an identity's `.creds` file is in a credential set. */
export function credsPath(dir: string, identity: string): string {
  return join(dir, `${identity}.creds`);
}

/** The identity with every permission: for operators' tools (the `nats` CLI, the test kit, bench and chaos). */
export const ADMIN_IDENTITY = 'admin';
export const ADMIN_PERMISSION: BusPermission = { publish: ['>'], subscribe: ['>'], allowResponses: true };

/**
 * Writes a whole credential set into `dir` (kept keys, or new ones the first time): `auth.conf` for the server, and a
 * `.creds` file for every identity of the table and for the admin identity. A service's credential is issued anew
 * each time (the old one stays valid until revoked); permissions come from the table.
 */
export async function writeCredentialSet(
  dir: string,
  table: PermissionTable,
  opts: { admin?: boolean } = {},
): Promise<string[]> {
  loadOrCreateState(dir);
  writePrivate(join(dir, 'auth.conf'), await serverAuthConfig(dir));
  const written: string[] = [];
  const identities = { ...table.identities, ...(opts.admin === false ? {} : { [ADMIN_IDENTITY]: ADMIN_PERMISSION }) };
  for (const [name, permission] of Object.entries(identities)) {
    const issued = await issueUser(dir, name, permission);
    writePrivate(credsPath(dir, name), issued.creds);
    written.push(name);
  }
  // The bus keys: the gateway signs every public operation it sends, each service checks the signature with its own.
  const secret = busSecret(dir);
  for (const name of Object.keys(table.identities)) {
    const key = name === SIGNING_IDENTITY ? secret : deriveBusKey(secret, name);
    writePrivate(busKeyPath(dir, name), `${key.toString('base64url')}\n`);
  }
  // What the set was issued for, so a checkout whose permission table changed since can tell (issuedFor).
  writePrivate(join(dir, ISSUED_FOR_FILE), JSON.stringify(table.identities));
  return written;
}

const ISSUED_FOR_FILE = 'issued-for.json';

/**
 * Whether the credential set in `dir` was issued for these identities and permissions (false when it was issued for
 * another table, or by a release that did not record it): credentials of an older table are refused by a server
 * configured from the new one.
 */
export function issuedFor(dir: string, table: PermissionTable): boolean {
  const file = join(dir, ISSUED_FOR_FILE);
  return existsSync(file) && readFileSync(file, 'utf8') === JSON.stringify(table.identities);
}

/**
 * The identity that signs the public operations it sends (the gateway): its bus key is the set's secret itself, so it
 * can derive the key of every service. Every other identity's bus key is its own derived key, which checks requests
 * to that service only.
 */
export const SIGNING_IDENTITY = 'gateway';

/** Where an identity's bus key is in a credential set: beside its `.creds` file. */
export function busKeyPath(dir: string, identity: string): string {
  return join(dir, `${identity}.key`);
}

/** The set's request-signing secret, made (and kept in the state) the first time. */
function busSecret(dir: string): Buffer {
  const state = requireState(dir);
  if (!state.busSecret) {
    state.busSecret = randomBytes(32).toString('base64url');
    writePrivate(join(dir, STATE_FILE), JSON.stringify(state, null, 2));
  }
  return Buffer.from(state.busSecret, 'base64url');
}
