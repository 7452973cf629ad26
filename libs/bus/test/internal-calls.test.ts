import { internalCall, notice } from '@platform/contracts';
import { AppError } from '@platform/problems';
import { connectAs, startNatsServer, type NatsServer } from '@platform/testkit';
import type { NatsConnection } from 'nats';
import { z } from 'zod';
import { decode, encode, publishNotice, ServiceBus, subscribeNotice } from '../src';

let nats: NatsServer;
let serviceNc: NatsConnection;
let callerNc: NatsConnection;
let management: ServiceBus;
let gateway: ServiceBus;

const double = internalCall({
  name: 'doubleForTest',
  subject: 'svc.management.tests.double',
  owner: 'management',
  callers: ['gateway'],
  request: z.object({ n: z.number().int(), label: z.string().default('none') }),
  reply: z.object({ doubled: z.number(), label: z.string(), requestId: z.string() }),
  description: 'test: doubles n',
  repeatable: true,
});

/** Served by a handler that answers another shape than its declaration says (a callee of another release, a bug). */
const drifted = internalCall({
  name: 'driftedForTest',
  subject: 'svc.management.tests.drifted',
  owner: 'management',
  callers: ['gateway'],
  request: z.object({}),
  reply: z.object({ count: z.number() }),
  description: 'test: answers a string where a number is declared',
});

const refused = internalCall({
  name: 'refusedForTest',
  subject: 'svc.management.tests.refused',
  owner: 'management',
  callers: ['gateway'],
  request: z.object({}),
  reply: z.object({}),
  description: 'test: always a 404 problem',
});

beforeAll(async () => {
  nats = await startNatsServer();
  serviceNc = await connectAs(nats.url, 'admin', { name: 'internal-calls-service', maxReconnectAttempts: 0 });
  callerNc = await connectAs(nats.url, 'admin', { name: 'internal-calls-caller', maxReconnectAttempts: 0 });
  management = new ServiceBus(serviceNc, 'management', 5000);
  gateway = new ServiceBus(callerNc, 'gateway', 5000);
  management.serveInternal(double, (req, ctx) => ({ doubled: req.n * 2, label: req.label, requestId: ctx.requestId }));
  management.serveInternal(drifted, () => ({ count: 'three' }) as unknown as { count: number });
  management.serveInternal(refused, () => {
    throw new AppError('not_found', 'Nothing here');
  });
  await serviceNc.flush();
});

afterAll(async () => {
  await callerNc?.close();
  await serviceNc?.close();
  await nats?.destroy();
});

describe('internal calls', () => {
  test('when a caller sends a valid request, then the owner gets it parsed (defaults applied) and the caller the typed reply', async () => {
    const reply = await gateway.callInternal(double, { n: 21 }, { requestId: 'req-double' });
    expect(reply).toEqual({ doubled: 42, label: 'none', requestId: 'req-double' });
  });

  test('when the request does not match its schema, then the caller gets the 400 validation problem of the public path', async () => {
    const err = await gateway.callInternal(double, { n: 'twenty' } as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ status: 400, code: 'bad_request', errors: [{ pointer: '/n' }] });
    expect((err as AppError).message).toMatch(/^Request body is invalid \(\/n: /);
  });

  test('when the reply does not match its schema, then the caller gets bad_gateway, not the reply', async () => {
    const err = await gateway.callInternal(drifted, {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ status: 502, code: 'bad_gateway' });
  });

  test('when the owner answers a problem, then the caller gets it as an AppError', async () => {
    await expect(gateway.callInternal(refused, {})).rejects.toMatchObject({
      status: 404,
      code: 'not_found',
      message: 'Nothing here',
    });
  });

  test('when a service serves a call another service owns, then it throws at once and subscribes nothing', () => {
    expect(() => gateway.serveInternal(double, () => ({ doubled: 0, label: '', requestId: '' }))).toThrow(
      /gateway cannot serve doubleForTest .* owned by management/,
    );
  });

  test('when a plain NATS client sends the wire request itself, then it gets the reply body with status 200 in a header', async () => {
    const msg = await callerNc.request(
      double.subject,
      encode({ principal: { kind: 'anonymous' }, body: { n: 2, label: 'plain' } }),
      { timeout: 5000 },
    );
    expect([msg.headers?.get('platform-status'), decode(msg.data)]).toEqual([
      '200',
      { doubled: 4, label: 'plain', requestId: 'internal' },
    ]);
  });
});

describe('notices', () => {
  const changed = notice({
    name: 'thingChangedForTest',
    subject: 'internal.tests.thing-changed',
    publishers: ['management'],
    subscribers: ['gateway', 'run-auth'],
    payload: z.object({ id: z.string() }),
    description: 'test',
  });
  const used = notice({
    name: 'thingUsedForTest',
    subject: 'internal.tests.thing-used',
    publishers: ['run-auth'],
    subscribers: ['management'],
    payload: z.object({ id: z.string() }),
    description: 'test',
    queue: true,
  });

  test('when a notice is published, then a subscriber gets its payload, and one that does not match is dropped and reported', async () => {
    const received: string[] = [];
    const invalid: unknown[] = [];
    let done!: () => void;
    const second = new Promise<void>((r) => (done = r));
    const sub = subscribeNotice(
      serviceNc,
      changed,
      'gateway',
      (p) => {
        received.push(p.id);
        if (received.length === 2) done();
      },
      { onInvalid: (err) => invalid.push(err) },
    );
    await serviceNc.flush();
    try {
      publishNotice(callerNc, changed, { id: 'a' });
      callerNc.publish(changed.subject, encode({ id: 42 }));
      callerNc.publish(changed.subject, new TextEncoder().encode('not json'));
      publishNotice(callerNc, changed, { id: 'b' });
      await second;
      expect(received).toEqual(['a', 'b']);
      expect(invalid).toHaveLength(2);
    } finally {
      sub.unsubscribe();
    }
  });

  test('when a notice is queued, then one replica of the subscribing service gets each message', async () => {
    const otherNc = await connectAs(nats.url, 'admin', { name: 'internal-calls-replica', maxReconnectAttempts: 0 });
    const got: string[] = [];
    const subs = [serviceNc, otherNc].map((nc) => subscribeNotice(nc, used, 'management', (p) => void got.push(p.id)));
    try {
      await Promise.all([serviceNc.flush(), otherNc.flush()]);
      for (let i = 0; i < 10; i++) publishNotice(callerNc, used, { id: `u${i}` });
      // Once the publisher's and both subscribers' round trips are done, every delivery has arrived.
      await callerNc.flush();
      await Promise.all([serviceNc.flush(), otherNc.flush()]);
      expect(got.sort()).toEqual(Array.from({ length: 10 }, (_, i) => `u${i}`).sort());
    } finally {
      for (const s of subs) s.unsubscribe();
      await otherNc.close();
    }
  });

  test('when a service that is not a declared subscriber subscribes, then it throws', () => {
    expect(() => subscribeNotice(serviceNc, used, 'gateway', () => undefined)).toThrow(
      /gateway is not a subscriber of the notice thingUsedForTest/,
    );
  });
});
