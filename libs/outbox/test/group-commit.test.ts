import mongoose from 'mongoose';
import { eventually, privateDatabase, type PrivateDatabase } from '@platform/testkit';
import { Outbox } from '../src';

interface Row {
  _id: string;
  n: number;
}

let db: PrivateDatabase;
let conn: mongoose.Connection;

beforeAll(async () => {
  db = await privateDatabase();
  conn = mongoose.createConnection(db.url, { serverSelectionTimeoutMS: 1000, maxPoolSize: 10 });
  await conn.asPromise();
}, 120_000);

afterAll(async () => {
  await conn?.close(true);
  db?.destroy();
});

// The database dies under a group insert (FerretDB killed, PostgreSQL stopped as in a crash) and comes back. The
// driver reports a connection lost during insertMany as a bulk write error with no failed rows listed; a batch in
// flight then must not be answered `inserted`, or a caller would answer 201 for rows that were never written.
test('when the database dies during group inserts, then every insert answered `inserted` is stored afterwards', async () => {
  const Rows = conn.model<Row>(
    'GroupRow',
    new mongoose.Schema({ _id: String, n: Number }, { collection: 'groupRows', versionKey: false }),
  );
  const collection = Rows.collection;
  // Rows without events: nothing is published (a publisher that is never called).
  const never = () => Promise.reject(new Error('nothing is published'));
  const group = new Outbox({ publisher: { publish: never, publishPending: never }, instance: 'i1' }).of(Rows);
  const inserted: string[] = [];
  let rejected = 0;
  let next = 0;
  let stop = false;
  let restarted = false;
  let insertedAfterRestart = 0;
  const worker = async () => {
    while (!stop) {
      const n = next++;
      try {
        const outcome = await group.insert({ _id: `r-${n}`, n });
        if (outcome === 'inserted') {
          inserted.push(`r-${n}`);
          if (restarted) insertedAfterRestart++;
        }
      } catch {
        // the database is away (the driver gives up after its 1 s server selection timeout)
        rejected++;
      }
    }
  };
  const workers = Promise.all(Array.from({ length: 20 }, worker));
  await eventually(() => inserted.length >= 300, '300 rows inserted', 60_000);
  await db.restart(1000, () => {});
  restarted = true;
  await eventually(() => insertedAfterRestart >= 300, '300 rows inserted after the restart', 60_000);
  stop = true;
  await workers;

  const stored = new Set((await collection.find({}, { projection: { _id: 1 } }).toArray()).map((d) => String(d._id)));
  expect(inserted.filter((id) => !stored.has(id))).toEqual([]);
  // the kill came while inserts were in flight: they failed (and writes went on afterwards, above)
  expect(rejected).toBeGreaterThan(0);
}, 120_000);
