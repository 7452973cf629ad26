// A node of a three-node NATS cluster (streams replicated 3 times) SIGKILLed during ingest and webhook delivery.
import type { NatsServer, Receiver } from '@platform/testkit';
import { bounded, failedRow, fault } from '../report';
import { faultOf } from '../process-faults';
import { BOUND, sleep, want } from '../run';
import { type Env, natsCluster, newStack, stopStack } from '../stacks';
import { runEventsFault } from '../workloads';

export async function clusterRows(receiver: Receiver): Promise<void> {
  if (!want('cluster')) return;
  const name = 'NATS cluster: 1 of 3 nodes SIGKILLed (ingest + delivery, R3)';
  let nodes: NatsServer[] = [];
  let env: Env | undefined;
  try {
    nodes = await natsCluster();
    await sleep(3000);
    const url = nodes.map((n) => n.url).join(',');
    env = await bounded('start the cluster stack', BOUND.stackStart, () =>
      newStack('cluster', ['management', 'run-auth', 'events-ingest', 'webhook-dispatcher'], {
        infra: { NATS_URL: url },
        env: { JS_REPLICAS: '3' },
      }),
    );
    const e = env;
    const victim = nodes[0]!;
    await fault(name, (s) =>
      runEventsFault(
        name,
        e,
        faultOf(() => victim.stop(true)),
        s,
        receiver,
      ),
    );
  } catch (err) {
    failedRow(name, err);
  } finally {
    await stopStack('cluster', env);
    // Killed outright (this cluster's data is thrown away, its store removed); stopping returns at once for the node killed earlier.
    for (const n of nodes) {
      await bounded(`stop cluster node ${n.port}`, 15_000, () => n.destroy(true)).catch((err) =>
        failedRow(`stop cluster node ${n.port}`, err),
      );
    }
  }
}
