import { operation } from '@platform/contracts';
import { AppError } from '@platform/problems';
import { connectAs, gatewayBusKey, startNatsServer, type NatsServer } from '@platform/testkit';
import type { Msg, NatsConnection, Subscription } from 'nats';
import { z } from 'zod';
import { decode, headersOf, reply, ServiceBus, SIGNATURE_HEADER, signRequest, type WireRequest } from '../src';
import { BATCH_HEADER, readFrame, writeFrame } from '../src/frame';

let nats: NatsServer;
let serviceNc: NatsConnection;
let callerNc: NatsConnection;
let service: ServiceBus;
let caller: ServiceBus;

const testOperation = (subject: string) =>
  operation({
    operationId: subject,
    summary: subject,
    tags: [],
    method: 'post',
    path: `/${subject}`,
    service: 'management',
    subject,
    auth: 'none',
    body: z.object({ n: z.number() }),
    reply: { status: 200 },
    errors: [],
  });
const echo = testOperation('batch.echo');
const large = testOperation('batch.large');
const previous = testOperation('batch.previous');

beforeAll(async () => {
  nats = await startNatsServer();
  serviceNc = await connectAs(nats.url, 'admin', { name: 'batch-service', maxReconnectAttempts: 0 });
  callerNc = await connectAs(nats.url, 'admin', { name: 'batch-caller', maxReconnectAttempts: 0 });
  service = new ServiceBus(serviceNc, 'batch-test', 5000, { key: gatewayBusKey() });
  // Even numbers are created (201, with a header), odd ones are refused (409): each request gets its own outcome.
  service.handle(echo, ({ body: { n } }, ctx) => {
    if (n % 2 === 1) throw new AppError('conflict', `odd ${n}`);
    return reply(201, { n, requestId: ctx.requestId }, { location: `/things/${n}` });
  });
  // Each reply 0.4 x the largest payload: one fits, four together do not.
  service.handle(large, ({ body: { n } }) => ({ n, pad: 'x'.repeat(largePad()) }));
  // A service of the release before: one request per message, answered as one JSON reply (a frame does not parse).
  serviceNc.subscribe(previous.subject, {
    queue: 'previous',
    callback: (_err, msg: Msg) => {
      try {
        const wire = decode<WireRequest>(msg.data);
        msg.respond(
          new TextEncoder().encode(
            JSON.stringify({ ok: true, status: 200, body: { n: (wire.body as { n: number }).n } }),
          ),
        );
      } catch {
        msg.respond(
          new TextEncoder().encode(
            JSON.stringify({
              ok: false,
              problem: { type: 'about:blank', title: 'Internal Server Error', status: 500, detail: 'x' },
            }),
          ),
        );
      }
    },
  });
  await serviceNc.flush();
  caller = new ServiceBus(callerNc, 'gateway', 5000, { key: gatewayBusKey() });
});

afterAll(async () => {
  await callerNc?.close();
  await serviceNc?.close();
  await nats?.destroy();
});

/** Counts the messages sent on a subject, batches apart (a plain subscription sees each one besides the queue group). */
async function counting(subject: string): Promise<{ batches: () => number; alone: () => number; sub: Subscription }> {
  let batches = 0;
  let alone = 0;
  const sub = serviceNc.subscribe(subject, {
    callback: (_err, msg) => (msg.headers?.get(BATCH_HEADER) ? batches++ : alone++),
  });
  await serviceNc.flush();
  return { batches: () => batches, alone: () => alone, sub };
}

const largePad = () => Math.floor(serviceNc.info!.max_payload * 0.4);

const request = (op: typeof echo, n: number) =>
  caller.send(op, { principal: { kind: 'anonymous' }, body: { n } }, { requestId: `req-${n}` });

test('when requests to one subject are made in one turn, then they travel in one message and each gets its own reply', async () => {
  const seen = await counting(echo.subject);
  try {
    const replies = await Promise.all(Array.from({ length: 20 }, (_, n) => request(echo, n)));
    replies.forEach((reply, n) => {
      if (n % 2 === 0)
        expect(reply).toEqual({
          ok: true,
          status: 201,
          json: JSON.stringify({ n, requestId: `req-${n}` }),
          headers: { location: `/things/${n}` },
        });
      else expect(reply).toMatchObject({ ok: false, problem: { status: 409, detail: `odd ${n}` } });
    });
    await callerNc.flush();
    await serviceNc.flush();
    expect([seen.batches(), seen.alone()]).toEqual([1, 0]);
  } finally {
    seen.sub.unsubscribe();
  }
});

test('when a request is alone in its turn, then it travels as a plain request', async () => {
  const seen = await counting(echo.subject);
  try {
    expect(await request(echo, 2)).toMatchObject({ ok: true, status: 201 });
    await serviceNc.flush();
    expect([seen.batches(), seen.alone()]).toEqual([0, 1]);
  } finally {
    seen.sub.unsubscribe();
  }
});

test('when the service takes one request per message (the release before), then every request is still answered, and later ones go one by one', async () => {
  const seen = await counting(previous.subject);
  try {
    const first = await Promise.all(Array.from({ length: 5 }, (_, n) => request(previous, n)));
    expect(first.map((r) => r.ok && (r.body as { n: number }).n)).toEqual([0, 1, 2, 3, 4]);
    const second = await Promise.all(Array.from({ length: 5 }, (_, n) => request(previous, 10 + n)));
    expect(second.map((r) => r.ok && (r.body as { n: number }).n)).toEqual([10, 11, 12, 13, 14]);
    await serviceNc.flush();
    // The batch was tried once; its answer (not a frame) sent its requests alone, and the next turn's went alone.
    expect([seen.batches(), seen.alone()]).toEqual([1, 10]);
  } finally {
    seen.sub.unsubscribe();
  }
});

test('when the replies together would pass the largest payload the server takes, then each is sent on its own and all arrive', async () => {
  const seen = await counting(large.subject);
  try {
    const replies = await Promise.all(Array.from({ length: 4 }, (_, n) => request(large, n)));
    expect(replies.map((r) => r.ok && JSON.parse(r.json!).n)).toEqual([0, 1, 2, 3]);
    expect(replies.every((r) => r.ok && JSON.parse(r.json!).pad.length === largePad())).toBe(true);
    await serviceNc.flush();
    expect(seen.batches()).toBe(1);
  } finally {
    seen.sub.unsubscribe();
  }
});

test('when a batch is not a frame of requests, then it is dropped and the service goes on serving', async () => {
  const key = gatewayBusKey().keyFor('management')!;
  const junk = new TextEncoder().encode('{"not":"a frame"}');
  callerNc.publish(echo.subject, junk, {
    headers: headersOf({ [BATCH_HEADER]: '2', [SIGNATURE_HEADER]: signRequest(key, echo.subject, junk) }),
  });
  await callerNc.flush();
  const replies = await Promise.all([request(echo, 4), request(echo, 6)]);
  expect(replies.map((r) => r.ok && r.status)).toEqual([201, 201]);
});

test('when one request of a turn has a body JSON cannot hold, then that request fails alone and the others are answered', async () => {
  const bad = caller.send(echo, { principal: { kind: 'anonymous' }, body: { n: 10n } });
  const good = [request(echo, 12), request(echo, 14)];
  await expect(bad).rejects.toBeInstanceOf(AppError);
  expect((await Promise.all(good)).map((r) => r.ok && r.status)).toEqual([201, 201]);
});

test('when a batch is unsigned, or one of its requests was changed after the gateway signed it, then every request in it is refused with 403', async () => {
  const key = gatewayBusKey().keyFor('management')!;
  const frame = (n: number) =>
    writeFrame(
      [2, 4].map((m) => ({
        headers: { 'x-request-id': `forged-${m}` },
        reply: `_INBOX.none.${m}`,
        text: JSON.stringify({ principal: { kind: 'admin', via: 'bearer' }, body: { n: m + n } }),
      })),
    );
  const send = async (payload: Uint8Array, signature?: string) => {
    const msg = await callerNc.request(echo.subject, payload, {
      timeout: 5000,
      headers: headersOf({ [BATCH_HEADER]: '2', [SIGNATURE_HEADER]: signature }),
    });
    return readFrame(msg.data)!.map((a) => {
      const r = a.data.length ? JSON.parse(new TextDecoder().decode(a.data)) : {};
      return Number(a.headers?.get('platform-status') || r.problem?.status);
    });
  };
  const signed = frame(0);
  // The same message as the gateway would sign it is served; the signature of one message does not fit another.
  expect(await send(signed, signRequest(key, echo.subject, signed))).toEqual([201, 201]);
  expect(await send(signed)).toEqual([403, 403]);
  expect(await send(frame(2), signRequest(key, echo.subject, signed))).toEqual([403, 403]);
});
