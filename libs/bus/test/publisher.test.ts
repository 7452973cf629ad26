import { DiscardPolicy, type JetStreamManager } from 'nats';
import { connectAs, startNatsServer, startTcpProxy, type NatsServer } from '@platform/testkit';
import { type connectNats, ensureStream, platformEventsStream, publisher } from '../src';

let nats: NatsServer;
let nc: Awaited<ReturnType<typeof connectNats>>;
let jsm: JetStreamManager;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connectAs(nats.url, 'admin', { name: 'publisher-test', maxReconnectAttempts: 0 });
  jsm = await nc.jetstreamManager();
  await ensureStream(jsm, platformEventsStream);
});

afterAll(async () => {
  await nc?.close();
  await nats?.destroy();
});

test('when an event is published twice with the same id, then the stream keeps it once, with its headers, and says the second was a duplicate', async () => {
  const pub = publisher(nc);
  const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
  expect(await pub.publish('evt.t1.p1.thing.created.v1', { n: 1 }, 'event-1', { traceparent })).toEqual({
    duplicate: false,
  });
  expect(await pub.publish('evt.t1.p1.thing.created.v1', { n: 1 }, 'event-1', { traceparent })).toEqual({
    duplicate: true,
  });

  const stored = await jsm.streams.getMessage(platformEventsStream.name, {
    last_by_subj: 'evt.t1.p1.thing.created.v1',
  });
  expect(stored.json()).toEqual({ n: 1 });
  expect(stored.header.get('Nats-Msg-Id')).toBe('event-1');
  expect(stored.header.get('traceparent')).toBe(traceparent);
  expect((await jsm.streams.info(platformEventsStream.name)).state.messages).toBe(1);
});

test('when no stream takes the subject, then the publish fails as not delivered (503)', async () => {
  await expect(publisher(nc).publish('nowhere.at.all', { n: 1 }, 'event-2')).rejects.toMatchObject({ code: '503' });
});

test("when the stream refuses the message, then the publish fails with JetStream's reason", async () => {
  await jsm.streams.add({ name: 'TINY', subjects: ['tiny.>'], max_msgs: 1, discard: DiscardPolicy.New });
  const pub = publisher(nc);
  expect(await pub.publish('tiny.one', { n: 1 }, 'tiny-1')).toEqual({ duplicate: false });
  await expect(pub.publish('tiny.two', { n: 2 }, 'tiny-2')).rejects.toThrow(/maximum messages/i);
  expect((await jsm.streams.info('TINY')).state.messages).toBe(1);
});

test('when the connection to NATS is lost, then a publish waiting for its acknowledgement and one made before the connection is back fail as not acknowledged (DISCONNECT), not at their timeout, and a publish once it is back is stored', async () => {
  const proxy = await startTcpProxy({ host: '127.0.0.1', port: nats.port });
  const far = await connectAs(`nats://127.0.0.1:${proxy.port}`, 'admin', { name: 'publisher-test-far' });
  try {
    // A subscriber that never answers holds the publish in flight, as a stream that has not acknowledged it yet.
    const received: string[] = [];
    const held = nc.subscribe('held.subject', { callback: (_err, msg) => received.push(msg.subject) });
    await nc.flush();
    const states = far.status();
    const pub = publisher(far, { timeoutMs: 2_000 });
    const waiting = pub.publish('held.subject', { n: 1 }, 'held-1');
    while (!received.length) await far.flush();
    proxy.cut();
    await expect(waiting).rejects.toMatchObject({ code: 'DISCONNECT' });
    await expect(pub.publish('evt.t1.p1.thing.created.v1', { n: 2 }, 'while-cut')).rejects.toMatchObject({
      code: 'DISCONNECT',
    });
    held.unsubscribe();

    proxy.restore();
    for await (const s of states) if (s.type === 'reconnect') break;
    expect(await pub.publish('evt.t1.p1.thing.created.v1', { n: 3 }, 'after-cut')).toEqual({ duplicate: false });
  } finally {
    await far.close();
    await proxy.close();
  }
});
