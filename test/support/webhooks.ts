import { Webhook } from 'standardwebhooks';
import { connect, type NatsConnection } from 'nats';
import { publisher } from '@platform/bus';
import { envelope, eventSubject, type EventDef } from '@platform/contracts';
import { randomId } from '@platform/secrets';
import { join } from 'node:path';
import {
  client,
  eventually,
  localSecrets,
  projectPath,
  removeNatsStore,
  repoRoot,
  startNatsServer,
  startStack,
  testStack,
  type Client,
  type ReceivedRequest,
  type Stack,
} from '@platform/testkit';

type Project = { tenantId: string; projectId: string };

/** Verifies a received delivery the way a receiver would, with the standardwebhooks reference library. */
export function verifyDelivery(secret: string, r: ReceivedRequest): unknown {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(r.headers)) if (typeof v === 'string') headers[k] = v;
  return new Webhook(secret).verify(r.body, headers);
}

export function signatureValid(secret: string, r: ReceivedRequest): boolean {
  try {
    verifyDelivery(secret, r);
    return true;
  } catch {
    return false;
  }
}

export async function createDestination(admin: Client, p: Project, body: Record<string, unknown>) {
  const res = await admin.post(`${projectPath(p)}/webhook-destinations`, { name: 'hook', ...body });
  if (res.status !== 201) throw new Error(`creating a destination failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data as { id: string; secret: string; enabled: boolean; disabledReason: string | null };
}

export async function deliveryLog(admin: Client, p: Project, destinationId: string, query = '') {
  const res = await admin.get(`${projectPath(p)}/webhook-destinations/${destinationId}/deliveries${query}`);
  if (res.status !== 200) throw new Error(`reading the delivery log failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data as Array<{
    id: string;
    eventId: string;
    eventType: string;
    status: string;
    attemptCount: number;
    nextAttemptAt: string | null;
    lastStatusCode: number | null;
    lastError: string | null;
    attempts: Array<{ attempt: number; statusCode: number | null; ok: boolean; error: string | null; durationMs: number; manual?: boolean | null }>;
  }>;
}

/** Waits until the destination's delivery log has an entry matching `pred`. */
export async function eventuallyLogged(admin: Client, p: Project, destinationId: string, pred: (d: Awaited<ReturnType<typeof deliveryLog>>[number]) => boolean, what: string, timeoutMs = 20_000) {
  return eventually(async () => (await deliveryLog(admin, p, destinationId, '?limit=100')).find(pred), what, timeoutMs, 150);
}

/** Publishes platform events to JetStream the way their owning services do (envelope, subject, Nats-Msg-Id). */
export async function eventPublisher(natsUrl: string) {
  const nc: NatsConnection = await connect({ servers: natsUrl, name: 'webhook-tests' });
  const pub = publisher(nc.jetstream());
  return {
    async publish<T>(def: EventDef, p: Project, data: T, id = `ev-${randomId(12)}`) {
      await pub.publish(eventSubject(def, p.tenantId, p.projectId), envelope(def, id, p, data), id);
      return id;
    },
    close: () => nc.close(),
  };
}

/**
 * A small private stack (own nats-server; management, webhook-dispatcher and the gateway as real processes) for
 * tests that need other dispatcher settings than the shared stack, or kill its processes. It shares the database
 * and Redis of the run; its dispatcher works its own partition of the deliveries collection.
 */
export async function startWebhookStack(name: string, env: Record<string, string>) {
  const shared = testStack().env;
  const nats = await startNatsServer();
  const secrets = localSecrets();
  const runId = `${name}-${randomId(6).toLowerCase()}`;
  let stack: Stack;
  try {
    stack = await startStack({
      infra: { NATS_URL: nats.url, REDIS_URL: shared.REDIS_URL!, MONGO_URL: shared.MONGO_URL! },
      services: ['management', 'webhook-dispatcher'],
      logDir: join(repoRoot, '.infra', 'test-logs', runId),
      env: {
        ...secrets,
        MONGO_DB_PREFIX: shared.MONGO_DB_PREFIX ?? 'test',
        REDIS_KEY_PREFIX: `test:${runId}:`,
        LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'warn',
        WEBHOOK_PARTITION: runId,
        WEBHOOK_CAP_WAIT_MS: '100',
        ...env,
      },
    });
  } catch (err) {
    await nats.stop(true);
    removeNatsStore(nats);
    throw err;
  }
  const events = await eventPublisher(nats.url);
  return {
    stack,
    admin: client(stack.gatewayUrl, secrets.ADMIN_TOKEN),
    events,
    /** The running dispatcher process. */
    dispatcher: () => stack.processes.find((p) => p.name === 'webhook-dispatcher')!,
    async stop() {
      await events.close();
      await stack.stop();
      await nats.stop();
      removeNatsStore(nats);
    },
  };
}
