import mongoose from 'mongoose';
import { ensureInfra } from '@platform/testkit';
import { ensureIndexes, retireIndexes } from '../src';

let conn: mongoose.Connection;

beforeAll(async () => {
  conn = mongoose.createConnection(ensureInfra().MONGO_URL, {
    dbName: `indexes_test_${process.pid}_${Date.now()}`,
    maxPoolSize: 2,
    autoIndex: false,
    autoCreate: false,
  });
  await conn.asPromise();
});

afterAll(async () => {
  await conn?.db?.dropDatabase();
  await conn?.close();
});

const keysOf = async (model: mongoose.Model<unknown>) =>
  (await model.collection.listIndexes().toArray()).map((i) => JSON.stringify(i.key)).sort();

test('when a collection has an index an earlier release declared and the schema retired, then ensureIndexes drops it and creates what is declared', async () => {
  // what an earlier release left: the declared index and two more
  const raw = conn.db!.collection('things');
  await raw.createIndex({ a: 1, b: -1 });
  await raw.createIndex({ c: 1 });
  await raw.createIndex({ d: 1 }, { sparse: true });

  const schema = new mongoose.Schema(
    { a: String, b: String, c: String, d: String, e: String },
    { collection: 'things' },
  );
  schema.index({ a: 1, b: -1 });
  schema.index({ e: 1 });
  retireIndexes(schema, [{ c: 1 }, { d: 1 }, { never: 1 }]);
  const model = conn.model('Thing', schema) as mongoose.Model<unknown>;

  await ensureIndexes(model);
  expect(await keysOf(model)).toEqual(['{"_id":1}', '{"a":1,"b":-1}', '{"e":1}']);
  // a second start has nothing to do
  await ensureIndexes(model);
  expect(await keysOf(model)).toEqual(['{"_id":1}', '{"a":1,"b":-1}', '{"e":1}']);
});
