import { operation } from '@platform/contracts';
import { connectAs, eventually, gatewayBusKey, startNatsServer, type NatsServer } from '@platform/testkit';
import type { NatsConnection } from 'nats';
import { z } from 'zod';
import { DEADLINE_HEADER, headersOf, SIGNATURE_HEADER, ServiceBus, signRequest, readReply } from '../src';

let nats: NatsServer;
let serviceNc: NatsConnection;
let callerNc: NatsConnection;
let service: ServiceBus;
let caller: ServiceBus;

const held = operation({
  operationId: 'shed.held',
  summary: 'shed.held',
  tags: [],
  method: 'post',
  path: '/shed/held',
  service: 'management',
  subject: 'shed.held',
  auth: 'none',
  body: z.object({ n: z.number() }),
  reply: { status: 200 },
  errors: [],
});

/** The requests the handler has started, each waiting until the test lets it go. */
const started: number[] = [];
let release: () => void = () => undefined;
let released = new Promise<void>((r) => (release = r));

beforeAll(async () => {
  nats = await startNatsServer();
  serviceNc = await connectAs(nats.url, 'admin', { name: 'shed-service', maxReconnectAttempts: 0 });
  callerNc = await connectAs(nats.url, 'admin', { name: 'shed-caller', maxReconnectAttempts: 0 });
  service = new ServiceBus(serviceNc, 'shed-test', 5000, { key: gatewayBusKey(), maxInFlight: 2 });
  service.handle(held, async ({ body: { n } }) => {
    started.push(n);
    await released;
    return { n };
  });
  await serviceNc.flush();
  caller = new ServiceBus(callerNc, 'gateway', 5000, { key: gatewayBusKey() });
});

afterAll(async () => {
  release();
  await callerNc?.close();
  await serviceNc?.close();
  await nats?.destroy();
});

const send = (n: number) =>
  caller.send(held, { principal: { kind: 'anonymous' }, body: { n } }, { requestId: `req-${n}` });

test('when a service is at its bound of requests in flight, then one more is answered 503 with Retry-After at once, and it serves again once one ends', async () => {
  const first = send(1);
  const second = send(2);
  // Both held by the handler: the bound of 2 is reached.
  await eventually(() => started.length === 2, 'both requests in their handler');
  const third = await send(3);
  expect(third.ok).toBe(false);
  expect(third.ok === false && third.problem.status).toBe(503);
  expect(third.headers).toEqual({ 'retry-after': '1' });
  expect(started).toEqual([1, 2]);

  release();
  expect(await first).toMatchObject({ ok: true, status: 200 });
  expect(await second).toMatchObject({ ok: true, status: 200 });
  released = Promise.resolve();
  expect(await send(4)).toMatchObject({ ok: true, status: 200 });
  expect(started).toEqual([1, 2, 4]);
});

test('when a request arrives after its deadline, then its handler never runs and it is answered 504', async () => {
  const text = JSON.stringify({ principal: { kind: 'anonymous' }, body: { n: 5 } });
  const headers = headersOf({
    'x-request-id': 'late',
    [DEADLINE_HEADER]: String(Date.now() - 1),
    [SIGNATURE_HEADER]: signRequest(gatewayBusKey().keyFor('management')!, held.subject, text),
  });
  const answer = readReply(
    await callerNc.request(held.subject, new TextEncoder().encode(text), { timeout: 5000, headers }),
  );
  expect(answer).toMatchObject({ ok: false, problem: { status: 504 } });
  expect(started).not.toContain(5);
});
