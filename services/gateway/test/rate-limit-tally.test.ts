import { Redis } from 'ioredis';
import { randomId } from '@platform/secrets';
import { testStack } from '@platform/testkit';
import { rateLimiter } from '../src/middleware/rate-limit';

const main = testStack();
let redis: Redis;

beforeAll(() => {
  redis = new Redis(main.env.REDIS_URL!, { keyPrefix: `test:rlt-${randomId(8)}:` });
});
afterAll(async () => {
  await redis?.quit();
});

const limiter = (perIp: number) =>
  rateLimiter(redis, {
    enabled: true,
    windowSeconds: 600,
    perIp,
    perCredential: 1000,
    keyPrefix: `rl-${randomId(8)}`,
    cookieName: 'platform.session_token',
    authFailuresPerIp: 100,
    authFailuresPerCredential: 20,
    authFailureWindowSeconds: 300,
    knownCredentialSeconds: 600,
  });

/** The parts of a request the limiter reads. */
const from = (ip: string, token?: string) => ({ ip, headers: token ? { authorization: `Bearer ${token}` } : {} }) as never;

describe('rate limits counted together for requests that arrive at once', () => {
  test('when more requests than the limit are checked in the same moment, then exactly the limit passes and the others get 429 with Retry-After', async () => {
    const limits = limiter(5);
    // Started in one turn of the event loop: their counters go to Redis in one call.
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => limits.check(from('192.0.2.1', 'sk_same'))));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(5);
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(refused).toHaveLength(3);
    for (const r of refused) expect(r.reason).toMatchObject({ status: 429, headers: { 'retry-after': expect.stringMatching(/^\d+$/) } });
    // The first five in the order they arrived are the ones served.
    expect(results.map((r) => r.status)).toEqual([...Array(5).fill('fulfilled'), ...Array(3).fill('rejected')]);
  });

  test('when requests from several addresses arrive together, then each address is counted on its own and the counts carry on into the next moment', async () => {
    const limits = limiter(3);
    const first = await Promise.allSettled([...Array(2).fill('192.0.2.2'), ...Array(4).fill('192.0.2.3')].map((ip: string) => limits.check(from(ip))));
    expect(first.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled', 'rejected']);
    // 192.0.2.2 has used 2 of 3: one more passes, the next does not.
    const later = await Promise.allSettled([limits.check(from('192.0.2.2')), limits.check(from('192.0.2.2'))]);
    expect(later.map((r) => r.status)).toEqual(['fulfilled', 'rejected']);
  });
});
