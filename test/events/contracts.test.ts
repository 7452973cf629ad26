import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv from 'ajv';
import {
  buildAsyncApi,
  allEvents,
  eventKey,
  eventSubject,
  webhookDeliveryFailed,
  webhookDeliverySucceeded,
} from '@platform/contracts';
import type { EventOf } from '@platform/consumer';
import {
  adminApi,
  aProject,
  eventually,
  repoRoot,
  startReceiver,
  testStack,
  uniqueId,
  type Receiver,
  adminClient,
  anAgentNamed,
} from '@platform/testkit';
import { adminNats } from '../support/connections';

const stack = testStack();
const api = adminApi(stack);
const nats = adminNats(stack);
const receivers: Receiver[] = [];

afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
});

/** Collects the events a typed consumer receives. */
async function collect<D extends typeof webhookDeliverySucceeded>(def: D, tenantId: string) {
  const got: Array<EventOf<D>> = [];
  await nats.subscribe(
    def,
    { durable: uniqueId('contracts-test').replace(/\./g, '_'), tenantId },
    (e) => void got.push(e),
  );
  return got;
}

describe('event contracts (AsyncAPI)', () => {
  test('when /asyncapi.json is read, then it is the committed snapshot, a valid AsyncAPI 3.0 document, and lists every declared event with its subject', async () => {
    const res = await fetch(`${stack.gatewayUrl}/asyncapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    const served: any = await res.json();
    const snapshot = JSON.parse(readFileSync(join(repoRoot, 'deploy', 'asyncapi.json'), 'utf8'));
    expect(served).toEqual(snapshot);
    expect(served).toEqual(JSON.parse(JSON.stringify(buildAsyncApi())));

    const schema = JSON.parse(readFileSync(require.resolve('@asyncapi/specs/schemas/3.0.0-without-$id.json'), 'utf8'));
    const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
    const validate = ajv.compile(schema);
    expect(validate(served) ? [] : validate.errors).toEqual([]);

    for (const def of allEvents) {
      const channel = served.channels[eventKey(def)];
      expect(channel.address.replace('{tenantId}', 'acme').replace('{projectId}', 'demo')).toBe(
        eventSubject(def, 'acme', 'demo'),
      );
      expect(served.components.messages[eventKey(def)]).toMatchObject({ name: def.name, 'x-publisher': def.publisher });
    }
    expect(Object.keys(served.channels)).toHaveLength(allEvents.length);
    expect(served.info.description).toContain('evt.<tenantId>.>');
  });
});

describe('webhook delivery outcome events', () => {
  test('when a webhook delivery succeeds, then webhook.delivery.succeeded is published for the tenant with the delivery and its last attempt', async () => {
    const p = aProject();
    const receiver = await startReceiver();
    receivers.push(receiver);
    const succeeded = await collect(webhookDeliverySucceeded, p.tenantId);
    await anAgentNamed(adminClient(), p, 'agent-a');
    const { key } = (await api.createApiKey({ params: p, body: { agentId: 'agent-a', name: 'events' } })).data;
    const dest = (
      await api.createWebhookDestination({
        params: p,
        body: { name: 'ok', url: receiver.url, eventTypes: ['event.created'] },
      })
    ).data;
    const created = (await api.withToken(key).createRunEvent({ body: { type: 'order.paid' } })).data;

    await receiver.waitFor((r) => r.json?.data?.event?.id === created.id);
    const [e] = await eventually(() => succeeded.length > 0 && succeeded, 'webhook.delivery.succeeded');
    expect(e).toMatchObject({
      type: 'webhook.delivery.succeeded',
      version: 1,
      tenantId: p.tenantId,
      projectId: p.projectId,
      data: {
        delivery: {
          destinationId: dest.id,
          eventType: 'event.created',
          attemptCount: 1,
          lastStatusCode: 200,
          lastError: null,
          lastAttempt: { attempt: 1, ok: true, statusCode: 200 },
        },
      },
    });
    const log = await api.listWebhookDeliveries({ params: { ...p, id: dest.id } });
    expect(log.data[0]).toMatchObject({ id: e!.data.delivery.id, status: 'delivered' });
  });

  test('when a webhook delivery runs out of attempts, then webhook.delivery.failed is published once, after the last attempt', async () => {
    const p = aProject();
    const receiver = await startReceiver();
    receivers.push(receiver);
    receiver.respondAlways(500);
    const failed = await collect(webhookDeliveryFailed, p.tenantId);
    await anAgentNamed(adminClient(), p, 'agent-a');
    const { key } = (await api.createApiKey({ params: p, body: { agentId: 'agent-a', name: 'events' } })).data;
    const dest = (
      await api.createWebhookDestination({
        params: p,
        body: { name: 'down', url: receiver.url, eventTypes: ['event.created'] },
      })
    ).data;
    await api.withToken(key).createRunEvent({ body: { type: 'order.paid' } });

    const [e] = await eventually(() => failed.length > 0 && failed, 'webhook.delivery.failed', 30_000);
    const log = await api.listWebhookDeliveries({ params: { ...p, id: dest.id } });
    expect(log.data[0]).toMatchObject({ status: 'failed' });
    expect(e!.data.delivery).toMatchObject({
      id: log.data[0]!.id,
      destinationId: dest.id,
      attemptCount: log.data[0]!.attemptCount,
      lastStatusCode: 500,
      lastAttempt: { ok: false, statusCode: 500 },
    });
    expect(failed).toHaveLength(1);
  });
});
