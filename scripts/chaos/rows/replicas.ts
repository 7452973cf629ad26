// Two replicas of each service under load (a stack of its own): one SIGKILLed (and started again), then a rolling
// restart; last, two gateways behind a balancer that routes to ready gateways only, restarted in turn.
import type { BackendServiceName } from '@platform/contracts';
import { gatewayPool, killAndRestart, rollingGateways, rollingRestart } from '../process-faults';
import { bounded, failedRow, fault, type Row } from '../report';
import { BOUND, want } from '../run';
import { type Env, newStack, stopStack } from '../stacks';
import { analyticsFault, evalsFault, managementFault, runEventsFault } from '../workloads';

const replicaServices: Array<
  [
    BackendServiceName,
    string,
    (env: Env, s: AbortSignal, name: string, fault: (end: () => void) => Promise<void>) => Promise<Row>,
  ]
> = [
  ['management', 'feedback creates + reads', (e, s, name, f) => managementFault(e, s, name, f, true)],
  ['events-ingest', 'run events with ids', (e, s, name, f) => runEventsFault(name, e, f, s)],
  ['analytics', 'ingest with ids + count reads', (e, s, name, f) => analyticsFault(e, s, name, f, true)],
  ['evals', 'dataset item creates + reads', (e, s, name, f) => evalsFault(e, s, name, f, true)],
];
const replicaRowNames = replicaServices.flatMap(([svc, what]) => [
  `2 replicas, SIGKILL one: ${svc} (${what})`,
  `2 replicas, rolling restart: ${svc} (${what})`,
]);
const gatewayRow = '2 replicas of the gateway behind a balancer, rolling restart (run events with ids)';

export async function replicaRows(): Promise<void> {
  if (![...replicaRowNames, gatewayRow].some(want)) return;
  let env: Env | undefined;
  try {
    env = await bounded('start the replicas stack', BOUND.stackStart, () =>
      newStack('replicas', ['management', 'run-auth', 'events-ingest', 'analytics', 'evals'], {
        // A deadline of 8 s in attempts of 2 s: a request held by a killed replica is answered by another one after 2 s.
        env: {
          SHUTDOWN_GRACE_MS: '10000',
          SHUTDOWN_DELAY_MS: '1500',
          NATS_REQUEST_TIMEOUT_MS: '8000',
          RETRY_ATTEMPT_TIMEOUT_MS: '2000',
        },
        replicas: { management: 2, 'events-ingest': 2, analytics: 2, evals: 2, gateway: 2 },
      }),
    );
    const e = env;
    for (const [svc, what, run] of replicaServices) {
      const killName = `2 replicas, SIGKILL one: ${svc} (${what})`;
      if (want(killName))
        await fault(killName, (s) => run(e, s, killName, killAndRestart(e.stack, svc)), 'no 5xx when safe to repeat');
      const rollName = `2 replicas, rolling restart: ${svc} (${what})`;
      if (want(rollName))
        await fault(rollName, (s) => run(e, s, rollName, rollingRestart(e.stack, svc)), 'no failed request');
    }
    if (want(gatewayRow)) {
      const pool = gatewayPool(e.stack);
      try {
        await fault(
          gatewayRow,
          (s) =>
            runEventsFault(gatewayRow, e, rollingGateways(e.stack, pool), s, undefined, { base: () => pool.pick() }),
          'no failed request',
        );
      } finally {
        await pool.close();
      }
    }
  } catch (err) {
    failedRow('replicas stack', err);
  } finally {
    await stopStack('replicas', env);
  }
}
