import mongoose from 'mongoose';
import type { NatsConnection } from 'nats';
import type { EventDef } from '@platform/contracts';
import { subscribe, type EventHandler, type SubscribeOptions, type Subscription } from '@platform/consumer';
import { connectAs, serviceDbName, type TestStackInfo } from '@platform/testkit';

/*
 * Connections a test file keeps for all its tests: opened before the first, closed after the last (jest's beforeAll
 * and afterAll of the file that calls these).
 */

function opened<T>(what: string, value: T | undefined): T {
  if (value === undefined) throw new Error(`${what} is opened before the file's tests: use it inside a test`);
  return value;
}

/**
 * NATS as `admin` (`nc`), and the typed consumers of @platform/consumer the tests start on it (`subscribe`): stopped,
 * then the connection drained, after the file's tests.
 */
export function adminNats(stack: Pick<TestStackInfo, 'env'>) {
  let nc: NatsConnection | undefined;
  const subs: Subscription[] = [];
  beforeAll(async () => {
    nc = await connectAs(stack.env.NATS_URL!, 'admin');
  });
  afterAll(async () => {
    await Promise.all(subs.map((s) => s.stop(1000)));
    await nc?.drain();
  });
  return {
    get nc(): NatsConnection {
      return opened('adminNats', nc);
    },
    async subscribe<D extends EventDef>(
      def: D,
      opts: SubscribeOptions,
      handler: EventHandler<D>,
    ): Promise<Subscription> {
      const sub = await subscribe(opened('adminNats', nc), def, opts, handler);
      subs.push(sub);
      return sub;
    },
  };
}

/** One service's own database, for a test that must see what is stored (`collection(name)`). */
export function serviceDatabase(stack: Pick<TestStackInfo, 'env'>, service: string) {
  let db: mongoose.Connection | undefined;
  beforeAll(async () => {
    db = await mongoose
      .createConnection(stack.env.MONGO_URL!, { dbName: serviceDbName(service), retryWrites: false })
      .asPromise();
  });
  afterAll(async () => {
    await db?.close();
  });
  return { collection: (name: string) => opened('serviceDatabase', db).collection(name) };
}
