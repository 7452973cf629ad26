import { Webhook } from 'standardwebhooks';
import type { NatsConnection } from 'nats';
import { publisher } from '@platform/bus';
import { envelope, eventSubject, type EventDef } from '@platform/contracts';
import { randomId } from '@platform/secrets';
import {
  connectAs,
  eventually,
  projectPath,
  startPrivateStack,
  startReceiver,
  type Client,
  type PrivateStack,
  type PrivateStackOptions,
  type ReceivedRequest,
  type Receiver,
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
    runEventId: string | null;
    status: string;
    attemptCount: number;
    nextAttemptAt: string | null;
    lastStatusCode: number | null;
    lastError: string | null;
    attempts: Array<{
      attempt: number;
      statusCode: number | null;
      ok: boolean;
      error: string | null;
      durationMs: number;
      manual?: boolean | null;
    }>;
  }>;
}

/** Waits until the destination's delivery log has an entry matching `pred`. */
export async function eventuallyLogged(
  admin: Client,
  p: Project,
  destinationId: string,
  pred: (d: Awaited<ReturnType<typeof deliveryLog>>[number]) => boolean,
  what: string,
  timeoutMs = 20_000,
) {
  return eventually(
    async () => (await deliveryLog(admin, p, destinationId, '?limit=100')).find(pred),
    what,
    timeoutMs,
    150,
  );
}

/** Publishes platform events to JetStream the way their owning services do (envelope, subject, Nats-Msg-Id). */
export async function eventPublisher(natsUrl: string) {
  const nc: NatsConnection = await connectAs(natsUrl, 'admin', { name: 'webhook-tests' });
  const pub = publisher(nc);
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
 * tests that need other dispatcher settings than the shared stack, or kill its processes, with a publisher of
 * platform events on its NATS.
 */
export async function startWebhookStack(name: string, env: Record<string, string>) {
  const stack = await startPrivateStack({
    name,
    services: ['management', 'webhook-dispatcher'],
    env: { WEBHOOK_CAP_WAIT_MS: '100', ...env },
  });
  const events = await eventPublisher(stack.natsUrl);
  stack.onStop(() => events.close());
  return { stack, admin: stack.admin, events, dispatcher: () => stack.process('webhook-dispatcher'), stop: stack.stop };
}

/**
 * For a test file that kills, stalls or restarts the services a webhook goes through (the run API to the receiver:
 * management, run-auth, events-ingest, webhook-dispatcher): a private stack of them (loopback webhooks allowed) and a
 * receiver, started before the file's tests and stopped after them (a process a test left stopped with SIGSTOP is
 * resumed first, so that it can stop). `stack` and `receiver` are there inside the tests.
 */
export function eventPathStack(opts: Omit<PrivateStackOptions, 'services'>, startTimeoutMs: number) {
  const running = {} as { stack: PrivateStack; receiver: Receiver };
  beforeAll(async () => {
    running.receiver = await startReceiver();
    running.stack = await startPrivateStack({
      ...opts,
      services: ['management', 'run-auth', 'events-ingest', 'webhook-dispatcher'],
      env: { ALLOW_LOOPBACK_WEBHOOKS: 'true', ...opts.env },
    });
  }, startTimeoutMs);
  afterAll(async () => {
    for (const p of running.stack?.processes ?? []) p.child.kill('SIGCONT');
    await running.stack?.stop();
    await running.receiver?.close();
  });
  return running;
}
