import { ensureStream, platformEventsStream, publisher } from '@platform/bus';
import { connectMongo, type Connection } from '@platform/mongo';
import { Outbox } from '@platform/outbox';
import { connectAs, startNatsServer, testStack, type NatsServer } from '@platform/testkit';

/**
 * What a test of management's repositories runs them on, started before the file's tests and stopped after them: a
 * nats-server of its own with the platform's event stream, the test database (`management-<name>`) and an outbox.
 */
export function repositoryParts(name: string): { readonly db: Connection; readonly outbox: Outbox } {
  let nats: NatsServer | undefined;
  let nc: Awaited<ReturnType<typeof connectAs>> | undefined;
  let db: Connection | undefined;
  let outbox: Outbox | undefined;
  beforeAll(async () => {
    nats = await startNatsServer();
    nc = await connectAs(nats.url, 'admin', { name: `${name}-test` });
    await ensureStream(await nc.jetstreamManager(), platformEventsStream);
    db = await connectMongo({ url: testStack().env.MONGO_URL!, dbPrefix: 'test', service: `management-${name}` });
    outbox = new Outbox({ publisher: publisher(nc), instance: `${name}-test` });
  });
  afterAll(async () => {
    await outbox?.stop();
    await db?.close();
    await nc?.close();
    await nats?.destroy();
  });
  return {
    get db() {
      return db!;
    },
    get outbox() {
      return outbox!;
    },
  };
}
