import dns, { type LookupAddress } from 'node:dns';

type Callback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
type LookupOptions = { family?: number | string; hints?: number; all?: boolean };
/** The shape `net.connect` calls a custom `lookup` with. */
export type LookupFunction = (hostname: string, options: LookupOptions, callback: Callback) => void;
type SystemLookup = (
  hostname: string,
  options: { all: true; family: number; hints?: number },
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

export interface CachedLookupOptions {
  /** How long an answer of the system resolver is used before it is asked again (ms). */
  ttlMs?: number;
  /** The system resolver (dns.lookup; replaced in tests). */
  system?: SystemLookup;
  now?: () => number;
}

interface Entry {
  at: number;
  addresses?: LookupAddress[];
  pending?: Promise<LookupAddress[]>;
}

/**
 * `dns.lookup` for the database's connections, asked once per host and `ttlMs` rather than once per connection.
 *
 * The system resolver (getaddrinfo: /etc/hosts, the search domains, as every other program resolves the name) runs on
 * libuv's thread pool, and a Node process cannot exit while one of those calls is pending: the pool's threads are
 * joined at exit. The database pool opens connections as load grows, each with a lookup; when the resolver stopped
 * answering for a while (a container network's DNS under load: the compose smoke of `pnpm test:containers`), one
 * such lookup held a drained events-ingest past its grace period until the engine killed it (exit 137). Now a name is
 * resolved once per `ttlMs` (callers in the meantime share the answer or the one call under way), and when the
 * resolver fails the previous answer is kept, so a database whose address has not changed stays reachable.
 */
export function cachedLookup(
  opts: CachedLookupOptions = {},
): LookupFunction & { stats(): { system: number; served: number } } {
  const ttlMs = opts.ttlMs ?? 30_000;
  const system: SystemLookup = opts.system ?? (dns.lookup as unknown as SystemLookup);
  const now = opts.now ?? Date.now;
  const entries = new Map<string, Entry>();
  const stats = { system: 0, served: 0 };

  const ask = (hostname: string, family: number, hints: number | undefined, entry: Entry): Promise<LookupAddress[]> => {
    stats.system++;
    entry.pending = new Promise<LookupAddress[]>((resolve, reject) => {
      system(hostname, { all: true, family, ...(hints !== undefined ? { hints } : {}) }, (err, addresses) => {
        entry.pending = undefined;
        if (!err && addresses.length) {
          entry.at = now();
          entry.addresses = addresses;
          resolve(addresses);
        } else if (entry.addresses)
          resolve(entry.addresses); // the resolver failed: the last answer stands
        else reject(err ?? Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }));
      });
    });
    return entry.pending;
  };

  const lookup = (hostname: string, options: LookupOptions | number, callback: Callback) => {
    const o: LookupOptions = typeof options === 'number' ? { family: options } : (options ?? {});
    const family = o.family === 'IPv4' ? 4 : o.family === 'IPv6' ? 6 : Number(o.family ?? 0);
    const key = `${hostname}|${family}|${o.hints ?? ''}`;
    let entry = entries.get(key);
    if (!entry) entries.set(key, (entry = { at: 0 }));
    const fresh = entry.addresses && now() - entry.at < ttlMs;
    const answer = fresh ? Promise.resolve(entry.addresses!) : (entry.pending ?? ask(hostname, family, o.hints, entry));
    if (fresh) stats.served++;
    answer.then(
      (addresses) => (o.all ? callback(null, addresses) : callback(null, addresses[0]!.address, addresses[0]!.family)),
      (err: NodeJS.ErrnoException) => callback(err, o.all ? [] : ''),
    );
  };
  return Object.assign(lookup as LookupFunction, { stats: () => ({ ...stats }) });
}

/** The one cache of this process's database connections. */
export const databaseLookup = cachedLookup();
