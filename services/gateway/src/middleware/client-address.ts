import ipaddr from 'ipaddr.js';
import type { Request } from 'express';

/**
 * The key a client address is counted under by the rate limits and the failed-authentication lockout: an IPv4
 * address (also one written IPv4-mapped, `::ffff:a.b.c.d`) as itself, an IPv6 address by its network of
 * `ipv6PrefixLength` bits (default /64, what one customer line or host is usually given: counting per /128 let one
 * client rotate through 2^64 addresses, each with a fresh limit). `req.ip` is the address after the trusted proxies
 * (TRUST_PROXY).
 */
export function clientAddressKey(ip: string | undefined, ipv6PrefixLength: number): string {
  if (!ip || !ipaddr.isValid(ip)) return 'unknown';
  const addr = ipaddr.process(ip);
  if (addr.kind() === 'ipv4') return addr.toString();
  const bytes = addr.toByteArray();
  for (let bit = ipv6PrefixLength; bit < 128; bit++) bytes[bit >> 3]! &= ~(0x80 >> (bit & 7));
  return `${ipaddr.fromByteArray(bytes).toString()}/${ipv6PrefixLength}`;
}

/** Keys of the addresses seen lately (parsing an address costs more than the rest of a rate-limit check). */
const recent = new Map<string, string>();
const RECENT_MAX = 10_000;

/** The client address key of a request. */
export function clientAddressOf(req: Request, ipv6PrefixLength: number): string {
  const ip = req.ip;
  if (!ip) return 'unknown';
  const memo = `${ipv6PrefixLength}|${ip}`;
  let key = recent.get(memo);
  if (key === undefined) {
    if (recent.size >= RECENT_MAX) recent.clear();
    key = clientAddressKey(ip, ipv6PrefixLength);
    recent.set(memo, key);
  }
  return key;
}
