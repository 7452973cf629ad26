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

const limiter = (perIp: number, keyPrefix = `rl-${randomId(8)}`) =>
  rateLimiter(redis, {
    enabled: true,
    windowSeconds: 600,
    perIp,
    perCredential: 1000,
    keyPrefix,
    cookieName: 'platform.session_token',
    authFailuresPerIp: 100,
    authFailuresPerCredential: 20,
    authFailureWindowSeconds: 300,
    knownCredentialSeconds: 600,
  });

/** The parts of a request the limiter reads. */
const from = (ip: string, token?: string) =>
  ({ ip, headers: token ? { authorization: `Bearer ${token}` } : {} }) as never;

describe('rate limits counted together for requests that arrive at once', () => {
  test('when more requests than the limit are checked in the same moment, then exactly the limit passes and the others get 429 with Retry-After', async () => {
    const limits = limiter(5);
    // Started in one turn of the event loop: their counters go to Redis in one call.
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, () => limits.check(from('192.0.2.1', 'sk_same'))),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(5);
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(refused).toHaveLength(3);
    for (const r of refused)
      expect(r.reason).toMatchObject({ status: 429, headers: { 'retry-after': expect.stringMatching(/^\d+$/) } });
    // The first five in the order they arrived are the ones served.
    expect(results.map((r) => r.status)).toEqual([...Array(5).fill('fulfilled'), ...Array(3).fill('rejected')]);
  });

  test('when requests from several addresses arrive together, then each address is counted on its own and the counts carry on into the next moment', async () => {
    const limits = limiter(3);
    const first = await Promise.allSettled(
      [...Array(2).fill('192.0.2.2'), ...Array(4).fill('192.0.2.3')].map((ip: string) => limits.check(from(ip))),
    );
    expect(first.map((r) => r.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'fulfilled',
      'rejected',
    ]);
    // 192.0.2.2 has used 2 of 3: one more passes, the next does not.
    const later = await Promise.allSettled([limits.check(from('192.0.2.2')), limits.check(from('192.0.2.2'))]);
    expect(later.map((r) => r.status)).toEqual(['fulfilled', 'rejected']);
  });
});

/** `n` checks of one address started in one turn; the number that passed. */
async function burst(limits: ReturnType<typeof limiter>, ip: string, n: number): Promise<number> {
  const results = await Promise.allSettled(Array.from({ length: n }, () => limits.check(from(ip))));
  return results.filter((r) => r.status === 'fulfilled').length;
}

/** The limiters' script calls on the shared client so far (Redis still answers them); `stop` puts the client back. */
function countScriptCalls(): { calls: () => number; stop: () => void } {
  const client = redis as unknown as { platformRateTally: (...args: unknown[]) => Promise<number[]> };
  const original = client.platformRateTally;
  let calls = 0;
  client.platformRateTally = function (this: unknown, ...args: unknown[]) {
    calls++;
    return original.apply(this, args);
  };
  return { calls: () => calls, stop: () => void (client.platformRateTally = original) };
}

/**
 * Runs `round` (it answers how many of its requests passed) until the limiters serve a whole round from what they hold,
 * without a script call. Until a gateway has measured a key's rate (a few tens of milliseconds) it asks Redis every
 * turn, and how many rounds fit in that time depends only on how fast Redis answers: the counts below start after it.
 */
async function untilServedAhead(round: () => Promise<number>, calls: () => number): Promise<number> {
  let passed = 0;
  for (;;) {
    const before = calls();
    const n = await round();
    passed += n;
    if (calls() === before || n === 0) return passed;
  }
}

/**
 * Runs `round` (it answers how many of its requests passed) until ten rounds in a row pass none: any advance left over
 * is used up before that. Answers the requests passed and the rounds run.
 */
async function untilRefused(round: () => Promise<number>): Promise<{ passed: number; rounds: number }> {
  let passed = 0;
  let rounds = 0;
  let refusedInARow = 0;
  while (refusedInARow < 10) {
    const n = await round();
    rounds++;
    passed += n;
    refusedInARow = n === 0 ? refusedInARow + 1 : 0;
  }
  return { passed, rounds };
}

describe('a busy client counted in advance', () => {
  let counter: ReturnType<typeof countScriptCalls>;
  beforeEach(() => {
    counter = countScriptCalls();
  });
  afterEach(() => counter.stop());

  test('when one address sends requests without pause, then most are answered without a round trip to Redis and every one within the limit passes', async () => {
    const prefix = `rl-${randomId(8)}`;
    const limits = limiter(100_000, prefix);
    const round = () => burst(limits, '192.0.2.10', 25);
    let sent = 0;
    let passed = 0;
    const warm = await untilServedAhead(async () => {
      sent += 25;
      return round();
    }, counter.calls);
    const from = counter.calls();
    // 40 turns of 25 requests.
    for (let i = 0; i < 40; i++) {
      passed += await round();
      sent += 25;
    }
    expect(warm + passed).toBe(sent);
    // A round trip per turn would be one call per 25 requests.
    expect(counter.calls() - from).toBeLessThan(40 / 2);
    // Redis counted every request served, and at most 1 % of the limit ahead of them.
    const counted = Number(await redis.get(`${prefix}:ip:192.0.2.10`));
    expect(counted).toBeGreaterThanOrEqual(sent);
    expect(counted).toBeLessThanOrEqual(sent + 1_000);
  });

  test('when one address goes past its limit at full speed, then exactly the limit passes', async () => {
    const limits = limiter(50_000);
    const round = () => burst(limits, '192.0.2.11', 25);
    const warm = await untilServedAhead(round, counter.calls);
    const from = counter.calls();
    const rest = await untilRefused(round);
    expect(warm + rest.passed).toBe(50_000);
    // Served from advances for the most part (else a call per burst; an advance is 500 here, 20 bursts).
    expect(counter.calls() - from).toBeLessThan(rest.rounds / 4);
  });

  test('when two gateways share one address limit at full speed, then together they pass exactly the limit', async () => {
    const prefix = `rl-${randomId(8)}`;
    const [a, b] = [limiter(50_000, prefix), limiter(50_000, prefix)];
    const round = async () => {
      const [na, nb] = await Promise.all([burst(a, '192.0.2.12', 25), burst(b, '192.0.2.12', 25)]);
      return na + nb;
    };
    const warm = await untilServedAhead(round, counter.calls);
    const from = counter.calls();
    const rest = await untilRefused(round);
    expect(warm + rest.passed).toBe(50_000);
    expect(counter.calls() - from).toBeLessThan(rest.rounds / 2);
  });
});
