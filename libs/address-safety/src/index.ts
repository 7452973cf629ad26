import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupAddress } from 'node:dns';
import ipaddr from 'ipaddr.js';

/**
 * Address safety for outbound requests to user-given URLs (webhooks): which addresses may be connected to.
 * Only public unicast addresses pass; loopback passes only when the policy allows it (local development and
 * tests). The decision is made before any connection: literal IPs from the URL, host names after resolution,
 * and the connection then goes to the vetted address only (see `vettedLookup`).
 */
export interface AddressPolicy {
  /** Development only: accept 127.0.0.0/8 and ::1. */
  allowLoopback: boolean;
}

export type AddressVerdict = { allowed: true; address: string } | { allowed: false; address: string; reason: string };

/** Cloud metadata endpoints, named explicitly even where a range rule already covers them. */
const METADATA_ADDRESSES = new Set([
  '169.254.169.254',
  '169.254.170.2',
  '100.100.100.200',
  '192.0.0.192',
  'fd00:ec2::254',
]);

const RANGE_WORDS: Record<string, string> = {
  unspecified: 'an unspecified',
  broadcast: 'a broadcast',
  multicast: 'a multicast',
  linkLocal: 'a link-local',
  loopback: 'a loopback',
  carrierGradeNat: 'a carrier-grade NAT (100.64.0.0/10)',
  private: 'a private',
  reserved: 'a reserved',
  uniqueLocal: 'a unique-local (fc00::/7)',
  ipv4Mapped: 'an IPv4-mapped IPv6',
  rfc6145: 'an IPv4-translated IPv6',
  rfc6052: 'a NAT64 (64:ff9b::/96)',
  '6to4': 'a 6to4',
  teredo: 'a Teredo',
  deprecatedSiteLocal: 'a site-local',
};

function describeRange(range: string): string {
  return RANGE_WORDS[range] ?? `a non-public (${range})`;
}

/** Is this IP address (v4 or v6, any textual form ipaddr.js parses) one we may connect to? */
export function classifyAddress(input: string, policy: AddressPolicy): AddressVerdict {
  const raw = input.startsWith('[') && input.endsWith(']') ? input.slice(1, -1) : input;
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(raw);
  } catch {
    return { allowed: false, address: raw, reason: `${raw} is not an IP address` };
  }
  const address = parsed.toString();
  const refuse = (reason: string): AddressVerdict => ({ allowed: false, address, reason });
  if (METADATA_ADDRESSES.has(address)) return refuse(`${address} is a cloud metadata address`);
  if (parsed.kind() === 'ipv6') {
    const v6 = parsed as ipaddr.IPv6;
    // Any IPv6 form that carries an IPv4 address (mapped, compatible ::a.b.c.d, translated) is refused outright:
    // the kernel may route it to the embedded IPv4 address.
    if (v6.isIPv4MappedAddress())
      return refuse(`${address} is an IPv4-mapped IPv6 address (${v6.toIPv4Address().toString()})`);
    const parts = v6.parts;
    if (
      parts.slice(0, 6).every((p) => p === 0) &&
      !(parts[6] === 0 && parts[7] === 1) &&
      !(parts[6] === 0 && parts[7] === 0)
    ) {
      return refuse(`${address} is an IPv4-compatible IPv6 address`);
    }
  }
  const range = parsed.range();
  if (range === 'unicast') return { allowed: true, address };
  if (range === 'loopback' && policy.allowLoopback) return { allowed: true, address };
  return refuse(`${address} is ${describeRange(range)} address`);
}

/** The host of a URL as the WHATWG parser normalises it (decimal, octal and hex IPv4 forms become dotted quads). */
export function urlHost(url: string): { host: string; literal: boolean } | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  return { host, literal: ipaddr.isValid(host) };
}

export type UrlVerdict =
  | { kind: 'literal'; verdict: AddressVerdict }
  | { kind: 'hostname'; host: string }
  | { kind: 'invalid'; reason: string };

/**
 * What can be decided from the URL alone: a literal IP is judged now; a host name must be resolved first.
 * Used on create/update (reject unsafe literals at once) and before each delivery.
 */
export function checkUrl(url: string, policy: AddressPolicy): UrlVerdict {
  const h = urlHost(url);
  if (!h) return { kind: 'invalid', reason: 'not an http or https URL' };
  if (h.literal) return { kind: 'literal', verdict: classifyAddress(h.host, policy) };
  if (!h.host) return { kind: 'invalid', reason: 'the URL has no host' };
  return { kind: 'hostname', host: h.host };
}

/** Thrown (and handed to the socket's lookup callback) when a host resolves to an address we refuse. */
export class AddressRefusedError extends Error {
  readonly code = 'EADDRREFUSED_POLICY';
  constructor(message: string) {
    super(message);
    this.name = 'AddressRefusedError';
  }
}

export function isAddressRefused(err: unknown): err is AddressRefusedError {
  for (let e = err as { code?: string; cause?: unknown } | undefined, i = 0; e && i < 5; e = e.cause as typeof e, i++) {
    if (e instanceof AddressRefusedError || e.code === 'EADDRREFUSED_POLICY') return true;
  }
  return false;
}

export interface ResolveOptions {
  /** Static host → address answers (like curl --resolve); the addresses are checked like any other. */
  overrides?: Record<string, string>;
  resolve?: (host: string) => Promise<LookupAddress[]>;
}

/** `a.example=203.0.113.7,b.test=10.0.0.1` → map. */
export function parseHostOverrides(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (text ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const [host, address] = pair.split('=').map((s) => s.trim());
    if (!host || !address || !ipaddr.isValid(address)) throw new Error(`bad host override "${pair}" (want host=ip)`);
    out[host.toLowerCase()] = address;
  }
  return out;
}

/**
 * Resolves a host and checks every address it resolves to; one refused address refuses the host (a name that
 * mixes public and private answers is a rebinding attempt). Returns the vetted addresses.
 */
export async function resolveVetted(
  host: string,
  policy: AddressPolicy,
  opts: ResolveOptions = {},
): Promise<LookupAddress[]> {
  const bare = host.startsWith('[') ? host.slice(1, -1) : host;
  let answers: LookupAddress[];
  if (ipaddr.isValid(bare)) {
    answers = [{ address: bare, family: bare.includes(':') ? 6 : 4 }];
  } else {
    const override = opts.overrides?.[bare.toLowerCase()];
    if (override) answers = [{ address: override, family: override.includes(':') ? 6 : 4 }];
    else answers = await (opts.resolve ?? ((h) => dnsLookup(h, { all: true, verbatim: true })))(bare);
  }
  if (!answers.length) throw new AddressRefusedError(`${bare} did not resolve to any address`);
  for (const a of answers) {
    const v = classifyAddress(a.address, policy);
    if (!v.allowed)
      throw new AddressRefusedError(
        bare === v.address ? v.reason : `${bare} resolves to a refused address: ${v.reason}`,
      );
  }
  return answers.map((a) => ({ address: classifyAddress(a.address, policy).address, family: a.family }));
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for `net.connect` / undici's `connect` option: the socket connects only to an address that was
 * resolved and checked here, so the check and the connection cannot disagree (no DNS rebinding in between).
 */
export function vettedLookup(policy: AddressPolicy, opts: ResolveOptions = {}) {
  return (
    hostname: string,
    options: { all?: boolean; family?: number | string } | number,
    callback: LookupCallback,
  ): void => {
    const all = typeof options === 'object' && options.all === true;
    resolveVetted(hostname, policy, opts).then(
      (addresses) => {
        if (all) callback(null, addresses);
        else callback(null, addresses[0]!.address, addresses[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, all ? [] : '', undefined),
    );
  };
}
