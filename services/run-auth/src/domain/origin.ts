/**
 * Origin matching against an app's allowedDomains:
 * - a missing or unparsable Origin, or an empty list, never matches;
 * - `*` matches every origin;
 * - `*.example.com` matches example.com and any subdomain of it;
 * - an entry with a port (`example.com:8443`) is compared with host:port, one without with the host alone;
 * - comparison is case-insensitive; the scheme is not checked.
 */
export function originAllowed(origin: string | undefined, allowedDomains: readonly string[]): boolean {
  if (!origin || !allowedDomains.length) return false;
  let host: string;
  let hostPort: string;
  try {
    const u = new URL(origin);
    if (!u.hostname) return false;
    host = u.hostname.toLowerCase();
    hostPort = u.port ? `${host}:${u.port}` : host;
  } catch {
    return false;
  }
  for (const raw of allowedDomains) {
    const entry = raw.trim().toLowerCase();
    if (entry === '*') return true;
    const hasPort = /:\d+$/.test(entry);
    const candidate = hasPort ? hostPort : host;
    if (entry.startsWith('*.')) {
      const apex = entry.slice(2);
      if (candidate === apex || candidate.endsWith(`.${apex}`)) return true;
    } else if (candidate === entry) {
      return true;
    }
  }
  return false;
}
