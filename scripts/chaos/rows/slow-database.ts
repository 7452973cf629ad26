// A slow database: every answer of the run's private FerretDB held back 200 ms (a TCP proxy in front of it) for 20 s,
// under more writers than events-ingest serves at once. The services shed what they cannot start (503 with
// Retry-After at once, BUS_MAX_IN_FLIGHT), the gateway too (GATEWAY_MAX_IN_FLIGHT), and work whose deadline passed is
// dropped; the p99 of the writes before, during and after the fault goes in the JSON.
import { privateDatabase, startTcpProxy, type PrivateDatabase, type TcpProxy } from '@platform/testkit';
import { type LoadResult, p99Between } from '../load';
import { bounded, failedRow, fault } from '../report';
import { faultOf } from '../process-faults';
import { BOUND, say, sleep, TOTAL, want } from '../run';
import { type Env, newStack, stopStack } from '../stacks';
import { runEventsFault } from '../workloads';

const DELAY_MS = 200;
const SLOW_MS = 20_000;
const name = `slow database (${DELAY_MS} ms added to every round trip for ${SLOW_MS / 1000} s; run events with ids, 48 writers)`;

export async function slowDatabaseRows(): Promise<void> {
  if (!want(name)) return;
  let db: PrivateDatabase | undefined;
  let proxy: TcpProxy | undefined;
  let env: Env | undefined;
  try {
    db = await bounded('start the private database', BOUND.stackStart, () => privateDatabase({ log: say }));
    proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(db.url).port) });
    const p = proxy;
    const mongoUrl = `mongodb://127.0.0.1:${p.port}/`;
    env = await bounded('start the slow database stack', BOUND.stackStart, () =>
      newStack('slowdb', ['management', 'run-auth', 'events-ingest'], {
        infra: { MONGO_URL: mongoUrl },
        // Bounds low enough for 48 writers to reach them.
        env: { BUS_MAX_IN_FLIGHT: '16', GATEWAY_MAX_IN_FLIGHT: '64', NATS_REQUEST_TIMEOUT_MS: '5000' },
      }),
    );
    const e = env;
    let result: LoadResult | undefined;
    await fault(name, async (s) => {
      const row = await runEventsFault(
        name,
        e,
        faultOf(async () => {
          p.delay(DELAY_MS);
          await sleep(SLOW_MS, s);
          p.delay(0);
        }),
        s,
        undefined,
        // Enough writes that the load outlasts the fault by some seconds.
        { shape: { workers: 48, total: TOTAL * 10 }, onLoad: (r) => (result = r) },
      );
      const r = result;
      if (r)
        row.p99Ms = {
          before: p99Between(r, 0, r.faultAt),
          during: p99Between(r, r.faultAt, r.faultEnd),
          after: p99Between(r, r.faultEnd + 2000, Infinity),
        };
      say(`${name}: p99 ${JSON.stringify(row.p99Ms)}`);
      return row;
    });
  } catch (err) {
    failedRow(name, err);
  } finally {
    await stopStack('slow database', env);
    await proxy?.close();
    db?.destroy();
  }
}
