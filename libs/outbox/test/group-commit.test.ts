import mongoose from 'mongoose';
import { privateDatabase, type PrivateDatabase } from '@platform/testkit';
import { groupInsert, type GroupCollection } from '../src';

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
  const collection = conn.db!.collection<Row>('groupRows');
  const group = groupInsert<Row>(() => collection as unknown as GroupCollection);
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
        rejected++;
        // the database is away: let the driver find it again before the next try
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  };
  const workers = Promise.all(Array.from({ length: 20 }, worker));
  const until = async (cond: () => boolean) => {
    while (!cond()) await new Promise((r) => setTimeout(r, 20));
  };
  await until(() => inserted.length >= 300);
  await db.restart(1000, () => {});
  restarted = true;
  await until(() => insertedAfterRestart >= 300);
  stop = true;
  await workers;

  const stored = new Set((await collection.find({}, { projection: { _id: 1 } }).toArray()).map((d) => d._id));
  expect(inserted.filter((id) => !stored.has(id))).toEqual([]);
  // the kill came while inserts were in flight: they failed (and writes went on afterwards, above)
  expect(rejected).toBeGreaterThan(0);
}, 120_000);
