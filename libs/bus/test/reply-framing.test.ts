import { operation } from '@platform/contracts';
import { AppError } from '@platform/problems';
import { connectAs, gatewayBusKey, startNatsServer, type NatsServer } from '@platform/testkit';
import { z } from 'zod';
import { decode, headersOf, reply, SIGNATURE_HEADER, ServiceBus, signRequest } from '../src';

let nats: NatsServer;
let nc: Awaited<ReturnType<typeof connectAs>>;
let bus: ServiceBus;

const testOperation = (name: string, status: number) =>
  operation({
    operationId: name,
    summary: name,
    tags: [],
    method: 'post',
    path: `/${name}`,
    service: 'management',
    subject: `framing.${name}`,
    auth: 'none',
    body: z.unknown(),
    reply: { status },
    errors: [],
  });
const ok = testOperation('ok', 201);
const empty = testOperation('empty', 204);
const problem = testOperation('problem', 200);

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connectAs(nats.url, 'admin', { name: 'reply-framing-test', maxReconnectAttempts: 0 });
  bus = new ServiceBus(nc, 'framing-test', 5000, { key: gatewayBusKey() });
  bus.handle(ok, ({ body }) => reply(201, { echo: body, at: new Date(0) }, { location: '/things/1' }));
  bus.handle(empty, () => reply(204));
  bus.handle(problem, () => {
    throw new AppError('conflict', 'Already there');
  });
  await nc.flush();
});

afterAll(async () => {
  await nc?.close();
  await nats?.destroy();
});

const wire = (body?: unknown) => ({
  principal: { kind: 'anonymous' as const },
  ...(body === undefined ? {} : { body }),
});

test('when a service answers, then the body arrives as its JSON text with status and headers, and call parses it', async () => {
  const reply = await bus.send(ok, wire({ n: 1 }));
  expect(reply).toEqual({
    ok: true,
    status: 201,
    json: '{"echo":{"n":1},"at":"1970-01-01T00:00:00.000Z"}',
    headers: { location: '/things/1' },
  });
  const parsed = await bus.call(ok, { body: { n: 2 } });
  expect(parsed).toEqual({
    status: 201,
    body: { echo: { n: 2 }, at: '1970-01-01T00:00:00.000Z' },
    headers: { location: '/things/1' },
  });
});

test('when the reply has no body or is a problem, then it reads as before (no body; problem with its status)', async () => {
  expect(await bus.send(empty, wire())).toEqual({ ok: true, status: 204 });
  const refused = await bus.send(problem, wire());
  expect(refused).toMatchObject({ ok: false, problem: { status: 409, detail: 'Already there' } });
});

test('when a request is sent as the gateway sends it, then the success travels as status headers and the body text', async () => {
  // Signed as the gateway signs (the signature is no part of the reply format).
  const payload = JSON.stringify(wire({ n: 3 }));
  const signature = signRequest(gatewayBusKey().keyFor('management')!, 'framing.ok', payload);
  const msg = await nc.request('framing.ok', new TextEncoder().encode(payload), {
    timeout: 5000,
    headers: headersOf({ [SIGNATURE_HEADER]: signature }),
  });
  expect([msg.headers?.get('platform-status'), JSON.parse(msg.headers?.get('platform-headers') ?? '{}')]).toEqual([
    '201',
    { location: '/things/1' },
  ]);
  expect(decode(msg.data)).toEqual({ echo: { n: 3 }, at: '1970-01-01T00:00:00.000Z' });
});
