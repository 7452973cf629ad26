import { DiscardPolicy, type JetStreamManager } from 'nats';
import { connectAs, startNatsServer, type NatsServer } from '@platform/testkit';
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
