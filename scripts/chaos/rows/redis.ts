// Redis lost: a private redis-server of the run (never the shared one) stopped for 10 s with its data kept (as a
// Redis with a snapshot comes back), then restarted empty (a memory-only Redis lost). Creates carry an
// Idempotency-Key and are sent twice; the rate limits are on (their counters live in Redis).
import { bounded, failedRow, fault } from '../report';
import { faultOf } from '../process-faults';
import { BOUND, sleep, want } from '../run';
import { type Env, newStack, stopStack } from '../stacks';
import { keyedCreatesFault } from '../workloads';

const what = 'creates with an Idempotency-Key, each sent twice; rate limits on';
const stoppedRow = `Redis stopped 10 s (${what})`;
const emptiedRow = `Redis restarted empty (${what}, then every one again)`;

export async function redisRows(): Promise<void> {
  if (![stoppedRow, emptiedRow].some(want)) return;
  let env: Env | undefined;
  try {
    env = await bounded('start the redis stack', BOUND.stackStart, () =>
      newStack('redis', ['management', 'run-auth'], {
        privateRedis: true,
        // Limits far above the load: counted in Redis on every request, never reached.
        env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_PER_IP: '100000000', RATE_LIMIT_PER_CREDENTIAL: '100000000' },
      }),
    );
    const e = env;
    const redis = e.stack.redis!;
    if (want(stoppedRow))
      await fault(stoppedRow, (s) =>
        keyedCreatesFault(
          stoppedRow,
          e,
          faultOf(async () => {
            await redis.stop({ keepData: true });
            await sleep(10_000);
            await redis.start();
          }),
          s,
        ),
      );
    if (want(emptiedRow))
      await fault(emptiedRow, (s) =>
        keyedCreatesFault(
          emptiedRow,
          e,
          faultOf(async () => {
            await redis.stop();
            await redis.start();
          }),
          s,
          true,
        ),
      );
  } catch (err) {
    failedRow('redis stack', err);
  } finally {
    await stopStack('redis', env);
  }
}
