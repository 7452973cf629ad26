// One stack for the process kills and the NATS restart (its own nats-server): each service SIGKILLed under load and
// started again at once, then NATS stopped for 5 s.
import type { Receiver } from '@platform/testkit';
import { faultOf, killAndRestart } from '../process-faults';
import { bounded, failedRow, fault } from '../report';
import { BOUND, sleep, want } from '../run';
import { type Env, newStack, stopStack } from '../stacks';
import { analyticsFault, evalsFault, managementFault, runEventsFault } from '../workloads';

export async function killRows(receiver: Receiver): Promise<void> {
  if (!(['sigkill', 'nats stopped'].some(want) || want('sigkill management') || want('sigkill evals'))) return;
  let env: Env | undefined;
  try {
    env = await bounded('start the kill stack', BOUND.stackStart, () =>
      newStack('kill', ['management', 'run-auth', 'events-ingest', 'analytics', 'evals', 'webhook-dispatcher']),
    );
    const e = env;
    if (want('sigkill management')) await fault('SIGKILL management (feedback creates)', (s) => managementFault(e, s));
    if (want('sigkill events-ingest'))
      await fault('SIGKILL events-ingest (run events)', (s) =>
        runEventsFault('SIGKILL events-ingest (run events)', e, killAndRestart(e.stack, 'events-ingest'), s),
      );
    if (want('sigkill analytics')) await fault('SIGKILL analytics (ingest)', (s) => analyticsFault(e, s));
    if (want('sigkill evals')) await fault('SIGKILL evals (dataset item creates)', (s) => evalsFault(e, s));
    if (want('sigkill webhook-dispatcher'))
      await fault('SIGKILL webhook-dispatcher (deliveries)', (s) =>
        runEventsFault(
          'SIGKILL webhook-dispatcher (deliveries)',
          e,
          killAndRestart(e.stack, 'webhook-dispatcher'),
          s,
          receiver,
        ),
      );
    if (want('nats stopped'))
      await fault('NATS stopped 5 s (run events)', (s) =>
        runEventsFault(
          'NATS stopped 5 s (run events)',
          e,
          faultOf(async () => {
            await e.stack.nats!.stop();
            await sleep(5000);
            await e.stack.nats!.start();
          }),
          s,
        ),
      );
  } catch (err) {
    failedRow('kill stack', err);
  } finally {
    await stopStack('kill', env);
  }
}
