import { coalescedSubject, operation } from '@platform/contracts';
import { AppError } from '@platform/problems';
import { connectAs, gatewayBusKey, startNatsServer, type NatsServer } from '@platform/testkit';
import type { NatsConnection, Subscription } from 'nats';
import { z } from 'zod';
import { headersOf, reply, ServiceBus, SIGNATURE_HEADER, signRequest } from '../src';
import { readCoalescedReply } from '../src/request-mux';

let nats: NatsServer;
let serviceNc: NatsConnection;
let callerNc: NatsConnection;
let service: ServiceBus;
let caller: ServiceBus;

const COALESCED = 'coalesce.echo';
const LARGE = 'coalesce.large';
const PLAIN_ONLY = 'coalesce.old';

const testOperation = (subject: string, coalesce: boolean) =>
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
    coalesce,
  });

beforeAll(async () => {
  nats = await startNatsServer();
  serviceNc = await connectAs(nats.url, 'admin', { name: 'coalesced-service', maxReconnectAttempts: 0 });
  callerNc = await connectAs(nats.url, 'admin', { name: 'coalesced-caller', maxReconnectAttempts: 0 });
  service = new ServiceBus(serviceNc, 'coalesce-test', 5000, { key: gatewayBusKey() });
  // Even numbers are created (201, with a header), odd ones are refused (409): each request gets its own outcome.
  service.handle(testOperation(COALESCED, true), ({ body: { n } }, ctx) => {
    if (n % 2 === 1) throw new AppError('conflict', `odd ${n}`);
    return reply(201, { n, requestId: ctx.requestId }, { location: `/things/${n}` });
  });
  // Each reply 0.4 x the largest payload: one fits, four together do not.
  service.handle(testOperation(LARGE, true), ({ body: { n } }) => ({ n, pad: 'x'.repeat(largePad()) }));
  // A service of an older release: the plain subject only.
  service.handle(testOperation(PLAIN_ONLY, false), ({ body: { n } }) => ({ n }));
  await serviceNc.flush();
  caller = new ServiceBus(callerNc, 'gateway', 5000, { coalescedSubjects: new Set([COALESCED, LARGE, PLAIN_ONLY]), key: gatewayBusKey() });
});

afterAll(async () => {
  await callerNc?.close();
  await serviceNc?.close();
  await nats?.destroy();
});

/** Counts the messages sent on a subject (a plain subscription sees each one besides the service's queue group). */
async function counting(subject: string): Promise<{ count: () => number; sub: Subscription }> {
  let n = 0;
  const sub = serviceNc.subscribe(subject, { callback: () => n++ });
  await serviceNc.flush();
  return { count: () => n, sub };
}

const largePad = () => Math.floor(serviceNc.info!.max_payload * 0.4);

const request = (subject: string, n: number) => caller.requestRaw(subject, { principal: { kind: 'anonymous' }, body: { n } }, { requestId: `req-${n}`, owner: 'management' });

test('when requests to a coalesced subject are made in one turn, then they travel in one message and each gets its own reply', async () => {
  const together = await counting(coalescedSubject(COALESCED));
  const alone = await counting(COALESCED);
  try {
    const replies = await Promise.all(Array.from({ length: 20 }, (_, n) => request(COALESCED, n)));
    replies.forEach((reply, n) => {
      if (n % 2 === 0) expect(reply).toEqual({ ok: true, status: 201, json: JSON.stringify({ n, requestId: `req-${n}` }), headers: { location: `/things/${n}` } });
      else expect(reply).toMatchObject({ ok: false, problem: { status: 409, detail: `odd ${n}` } });
    });
    await callerNc.flush();
    await serviceNc.flush();
    expect(together.count()).toBe(1);
    expect(alone.count()).toBe(0);
  } finally {
    together.sub.unsubscribe();
    alone.sub.unsubscribe();
  }
});

test('when a request is alone in its turn, then it travels as a plain request', async () => {
  const together = await counting(coalescedSubject(COALESCED));
  const alone = await counting(COALESCED);
  try {
    expect(await request(COALESCED, 2)).toMatchObject({ ok: true, status: 201 });
    await serviceNc.flush();
    expect([together.count(), alone.count()]).toEqual([0, 1]);
  } finally {
    together.sub.unsubscribe();
    alone.sub.unsubscribe();
  }
});

test('when the service serves only the plain subject (an older release), then every request is still answered, and later ones go one by one', async () => {
  // Counted at the caller: a subscription on the coalesced subject would be a responder, and the point is that there is none.
  const published: string[] = [];
  const publish = callerNc.publish.bind(callerNc);
  callerNc.publish = (subject, ...rest) => {
    published.push(subject);
    publish(subject, ...rest);
  };
  try {
    const first = await Promise.all(Array.from({ length: 5 }, (_, n) => request(PLAIN_ONLY, n)));
    expect(first.map((r) => r.ok && JSON.parse(r.json!).n)).toEqual([0, 1, 2, 3, 4]);
    const second = await Promise.all(Array.from({ length: 5 }, (_, n) => request(PLAIN_ONLY, 10 + n)));
    expect(second.map((r) => r.ok && JSON.parse(r.json!).n)).toEqual([10, 11, 12, 13, 14]);
    // The coalesced subject was tried once; "no responders" sent its requests alone, and the next turn's went alone.
    expect(published.filter((s) => s === coalescedSubject(PLAIN_ONLY))).toHaveLength(1);
    expect(published.filter((s) => s === PLAIN_ONLY)).toHaveLength(10);
  } finally {
    callerNc.publish = publish;
  }
});

test('when the replies together would pass the largest payload the server takes, then each is sent on its own and all arrive', async () => {
  const together = await counting(coalescedSubject(LARGE));
  try {
    const replies = await Promise.all(Array.from({ length: 4 }, (_, n) => request(LARGE, n)));
    expect(replies.map((r) => r.ok && JSON.parse(r.json!).n)).toEqual([0, 1, 2, 3]);
    expect(replies.every((r) => r.ok && JSON.parse(r.json!).pad.length === largePad())).toBe(true);
    await serviceNc.flush();
    expect(together.count()).toBe(1);
  } finally {
    together.sub.unsubscribe();
  }
});

test('when a message on a coalesced subject is not a list of requests, then it is dropped and the service goes on serving', async () => {
  callerNc.publish(coalescedSubject(COALESCED), new TextEncoder().encode('{"not":"a list"}'));
  await callerNc.flush();
  const replies = await Promise.all([request(COALESCED, 4), request(COALESCED, 6)]);
  expect(replies.map((r) => r.ok && r.status)).toEqual([201, 201]);
});

test('when one request of a turn has a body JSON cannot hold, then that request fails alone and the others are answered', async () => {
  const bad = caller.requestRaw(COALESCED, { principal: { kind: 'anonymous' }, body: { n: 10n } }, { owner: 'management' });
  const good = [request(COALESCED, 12), request(COALESCED, 14)];
  await expect(bad).rejects.toBeInstanceOf(AppError);
  expect((await Promise.all(good)).map((r) => r.ok && r.status)).toEqual([201, 201]);
});

test('when a coalesced message is unsigned, or one of its requests was changed after the gateway signed it, then every request in it is refused with 403', async () => {
  const key = gatewayBusKey().keyFor('management')!;
  const items = (n: number) => [2, 4].map((m) => ({ r: `_INBOX.none.${m}`, h: { 'x-request-id': `forged-${m}` }, d: { principal: { kind: 'admin', via: 'bearer' }, body: { n: m + n } } }));
  const send = async (payload: string, signature?: string) => {
    const msg = await callerNc.request(coalescedSubject(COALESCED), new TextEncoder().encode(payload), {
      timeout: 5000,
      headers: signature ? headersOf({ [SIGNATURE_HEADER]: signature }) : undefined,
    });
    return readCoalescedReply(msg.data)!.map((a) => { const r = JSON.parse(new TextDecoder().decode(a.data)); return (r.status ?? r.problem?.status) as number; });
  };
  const signed = JSON.stringify(items(0));
  // The same message as the gateway would sign it is served; the signature of one message does not fit another.
  expect(await send(signed, signRequest(key, COALESCED, signed))).toEqual([201, 201]);
  expect(await send(signed)).toEqual([403, 403]);
  expect(await send(JSON.stringify(items(2)), signRequest(key, COALESCED, signed))).toEqual([403, 403]);
});
