// One service cut off from NATS for 30 s while the rest run: the service reaches the run's nats-server through a TCP
// proxy of its own, which is cut (its connections dropped, new ones refused) and restored. For events-ingest (the
// gateway's requests find no responder: 503 at once, repeated) and for the webhook dispatcher (its JetStream work
// waits, and resumes when it is back).
import type { BackendServiceName } from '@platform/contracts';
import { startNatsServer, startTcpProxy, type NatsServer, type Receiver, type TcpProxy } from '@platform/testkit';
import { bounded, failedRow, fault } from '../report';
import { faultOf } from '../process-faults';
import { BOUND, sleep, want } from '../run';
import { type Env, newStack, stopStack } from '../stacks';
import { runEventsFault } from '../workloads';

const CUT_MS = 30_000;
const cutOff: readonly BackendServiceName[] = ['events-ingest', 'webhook-dispatcher'];
const rowOfService = (svc: BackendServiceName) => `${svc} cut off from NATS 30 s (run events with ids + deliveries)`;

export async function partitionRows(receiver: Receiver): Promise<void> {
  if (!cutOff.map(rowOfService).some(want)) return;
  let nats: NatsServer | undefined;
  const proxies = new Map<BackendServiceName, TcpProxy>();
  let env: Env | undefined;
  try {
    nats = await startNatsServer();
    for (const svc of cutOff) proxies.set(svc, await startTcpProxy({ host: '127.0.0.1', port: nats.port }));
    const natsUrl = nats.url;
    env = await bounded('start the partition stack', BOUND.stackStart, () =>
      newStack('partition', ['management', 'run-auth', 'events-ingest', 'webhook-dispatcher'], {
        infra: { NATS_URL: natsUrl },
        serviceEnv: Object.fromEntries(
          [...proxies].map(([svc, proxy]) => [svc, { NATS_URL: `nats://127.0.0.1:${proxy.port}` }]),
        ),
      }),
    );
    const e = env;
    for (const svc of cutOff) {
      const name = rowOfService(svc);
      const proxy = proxies.get(svc)!;
      if (want(name))
        await fault(name, (s) =>
          runEventsFault(
            name,
            e,
            faultOf(async () => {
              proxy.cut();
              await sleep(CUT_MS, s);
              proxy.restore();
            }),
            s,
            receiver,
          ),
        );
    }
  } catch (err) {
    failedRow('partition stack', err);
  } finally {
    await stopStack('partition', env);
    for (const proxy of proxies.values()) await proxy.close();
    await nats?.destroy();
  }
}
