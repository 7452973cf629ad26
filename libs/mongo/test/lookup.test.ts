import type { LookupAddress } from 'node:dns';
import { ensureInfra } from '@platform/testkit';
import { cachedLookup, connectMongo, databaseLookup, type LookupFunction } from '../src';

/** A system resolver whose calls the test answers itself. */
function fakeSystem() {
  const calls: Array<{
    hostname: string;
    answer(err: NodeJS.ErrnoException | null, addresses?: LookupAddress[]): void;
  }> = [];
  const system = (
    hostname: string,
    _o: unknown,
    cb: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
  ) => {
    calls.push({ hostname, answer: (err, addresses = []) => cb(err, addresses) });
  };
  return { calls, system };
}

const one = (lookup: LookupFunction, hostname: string) =>
  new Promise<{ err: NodeJS.ErrnoException | null; address: unknown; family?: number }>((resolve) =>
    lookup(hostname, { family: 0 }, (err, address, family) => resolve({ err, address, family })),
  );
const all = (lookup: LookupFunction, hostname: string) =>
  new Promise<{ err: NodeJS.ErrnoException | null; address: unknown }>((resolve) =>
    lookup(hostname, { family: 0, all: true }, (err, address) => resolve({ err, address })),
  );

const A = [{ address: '10.0.0.7', family: 4 }];
const B = [{ address: '10.0.0.9', family: 4 }];

describe('cachedLookup', () => {
  it('asks the system resolver once for connections opened together and within the time to live, in both answer shapes', async () => {
    let t = 0;
    const { calls, system } = fakeSystem();
    const lookup = cachedLookup({ system, ttlMs: 30_000, now: () => t });
    const first = [one(lookup, 'mongo'), all(lookup, 'mongo'), one(lookup, 'mongo')];
    expect(calls).toHaveLength(1);
    calls[0]!.answer(null, A);
    expect(await Promise.all(first)).toEqual([
      { err: null, address: '10.0.0.7', family: 4 },
      { err: null, address: A },
      { err: null, address: '10.0.0.7', family: 4 },
    ]);
    t = 29_000;
    expect(await one(lookup, 'mongo')).toEqual({ err: null, address: '10.0.0.7', family: 4 });
    expect(calls).toHaveLength(1);
    expect(lookup.stats()).toEqual({ system: 1, served: 1 });
  });

  it('asks again after the time to live; a new answer replaces the old one, a failure keeps it', async () => {
    let t = 0;
    const { calls, system } = fakeSystem();
    const lookup = cachedLookup({ system, ttlMs: 30_000, now: () => t });
    const first = one(lookup, 'mongo');
    calls[0]!.answer(null, A);
    await first;

    t = 31_000;
    const second = one(lookup, 'mongo');
    expect(calls).toHaveLength(2);
    calls[1]!.answer(null, B);
    expect(await second).toEqual({ err: null, address: '10.0.0.9', family: 4 });

    t = 62_000;
    const third = one(lookup, 'mongo');
    expect(calls).toHaveLength(3);
    calls[2]!.answer(Object.assign(new Error('getaddrinfo EAI_AGAIN mongo'), { code: 'EAI_AGAIN' }));
    expect(await third).toEqual({ err: null, address: '10.0.0.9', family: 4 });
  });

  it("passes the resolver's error on when there is no earlier answer, and keeps names apart", async () => {
    const { calls, system } = fakeSystem();
    const lookup = cachedLookup({ system });
    const missing = one(lookup, 'nowhere');
    const other = one(lookup, 'mongo');
    expect(calls.map((c) => c.hostname)).toEqual(['nowhere', 'mongo']);
    calls[0]!.answer(Object.assign(new Error('getaddrinfo ENOTFOUND nowhere'), { code: 'ENOTFOUND' }));
    calls[1]!.answer(null, A);
    expect((await missing).err?.code).toBe('ENOTFOUND');
    expect((await other).address).toBe('10.0.0.7');
  });
});

test("a service's database connections resolve the database host through the cache", async () => {
  const url = new URL(ensureInfra().MONGO_URL);
  url.hostname = 'localhost';
  const before = databaseLookup.stats();
  const conn = await connectMongo({
    url: url.toString(),
    dbPrefix: `lookup_test_${process.pid}`,
    service: 'lookup',
    poolSize: 8,
  });
  try {
    // concurrent commands make the pool open more connections than the first
    await Promise.all(Array.from({ length: 8 }, () => conn.db!.command({ ping: 1 })));
    const after = databaseLookup.stats();
    expect(after.system - before.system).toBe(1);
    expect(after.served - before.served).toBeGreaterThan(0);
  } finally {
    await conn.close();
  }
});
