// The private stacks of the run, and how each is stopped (within a bound).
import type { BackendServiceName } from '@platform/contracts';
import {
  freePort,
  startNatsServer,
  startPrivateStack,
  type Client,
  type NatsServer,
  type PrivateStack,
  type PrivateStackOptions,
} from '@platform/testkit';
import { bounded, failedRow } from './report';
import { BOUND, dbPrefix, logDirOf } from './run';

export type Env = { stack: PrivateStack; admin: Client; adminToken: string; analyticsUrl: string };

/** A private stack of the run (its own NATS unless `infra` names one); its databases are dropped when it stops. */
export async function newStack(
  name: string,
  services: BackendServiceName[],
  opts: Pick<PrivateStackOptions, 'infra' | 'replicas' | 'privateRedis' | 'serviceEnv' | 'nodeArgs'> & {
    env?: Record<string, string>;
  } = {},
): Promise<Env> {
  const stack = await startPrivateStack({
    name,
    services,
    infra: opts.infra,
    replicas: opts.replicas,
    privateRedis: opts.privateRedis,
    serviceEnv: opts.serviceEnv,
    nodeArgs: opts.nodeArgs,
    // One prefix for the run's stacks (one after another): the read-backs below look there.
    dbPrefix,
    logDir: logDirOf(name),
    env: {
      ALLOW_LOOPBACK_WEBHOOKS: 'true',
      NATS_REQUEST_TIMEOUT_MS: '3000',
      WEBHOOK_RETRY_SCHEDULE_MS: '300,600,1200,2400,4800,9600,9600',
      WEBHOOK_CAP_WAIT_MS: '100',
      OUTBOX_SWEEP_MS: '500',
      RATE_LIMIT_ENABLED: 'false',
      AUTH_FAILURE_LIMIT_PER_IP: '1000000',
      ...opts.env,
    },
  });
  return { stack, admin: stack.admin, adminToken: stack.adminToken, analyticsUrl: stack.analyticsUrl };
}

/** Stops a stack within its bound; past it, its processes are killed outright. */
export async function stopStack(label: string, env: Env | undefined): Promise<void> {
  if (!env) return;
  try {
    await bounded(`teardown ${label}`, BOUND.teardown, () => env.stack.stop());
  } catch (err) {
    for (const p of env.stack.processes) p.child.kill('SIGKILL');
    failedRow(`teardown of the ${label} stack`, err);
  }
}

/** A three-node NATS cluster of the run (JetStream on every node). */
export async function natsCluster(): Promise<NatsServer[]> {
  const clusterPorts = [await freePort(), await freePort(), await freePort()];
  const routes = clusterPorts.map((p) => `nats://127.0.0.1:${p}`).join(',');
  return Promise.all(
    clusterPorts.map((cp, i) =>
      startNatsServer({
        args: [
          '--cluster',
          `nats://127.0.0.1:${cp}`,
          '--routes',
          routes,
          '--cluster_name',
          'chaos',
          '--server_name',
          `chaos-${i}`,
        ],
      }),
    ),
  );
}
