import mongoose from 'mongoose';
import { ensureInfra } from '@platform/testkit';
import { listPage } from '../src';

let conn: mongoose.Connection;
let Model: mongoose.Model<{ _id: string; n: number }>;
let counts = 0;

beforeAll(async () => {
  conn = mongoose.createConnection(ensureInfra().MONGO_URL, {
    dbName: `list_page_test_${process.pid}_${Date.now()}`,
    maxPoolSize: 2,
  });
  await conn.asPromise();
  Model = conn.model<{ _id: string; n: number }>(
    'Row',
    new mongoose.Schema<{ _id: string; n: number }>({ _id: String, n: Number }, { versionKey: false }),
  );
  await Model.insertMany(Array.from({ length: 25 }, (_, i) => ({ _id: `r${String(i).padStart(2, '0')}`, n: i })));
});

afterAll(async () => {
  await conn.dropDatabase();
  await conn.close();
});

const query = { filter: {}, sort: { n: 1 as const } };
/** Counts the counts listPage makes (its only other query is the find). */
const counted = () => async () => {
  counts++;
  return Model.countDocuments({});
};

describe('listPage', () => {
  beforeEach(() => {
    counts = 0;
  });

  it('tells the total from a short page without counting, and counts where the page is full', async () => {
    const last = await listPage(Model, query, 3, 10, { total: counted() });
    expect(last.rows.map((r) => r.n)).toEqual([20, 21, 22, 23, 24]);
    expect(last.total).toBe(25);
    expect(counts).toBe(0);

    const first = await listPage(Model, query, 1, 10, { total: counted() });
    expect(first.rows.map((r) => r.n)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(first.total).toBe(25);
    expect(counts).toBe(1);
  });

  it('reads ahead to spare the count, and returns only the page', async () => {
    const page = await listPage(Model, query, 1, 10, { readAhead: 50, total: counted() });
    expect(page.rows).toHaveLength(10);
    expect(page.total).toBe(25);
    expect(counts).toBe(0);
  });

  it('counts for an empty page past the end (the rows tell nothing), and an empty list is a total of 0', async () => {
    const past = await listPage(Model, query, 9, 10, { total: counted() });
    expect(past).toEqual({ rows: [], total: 25 });
    expect(counts).toBe(1);
    const none = await listPage(Model, { filter: { n: -1 }, sort: { n: 1 } }, 1, 10);
    expect(none).toEqual({ rows: [], total: 0 });
  });

  it('applies the projection', async () => {
    const page = await listPage<{ _id: string; n: number }, { _id: string; n?: number }>(
      Model,
      { ...query, projection: { n: 0 } },
      1,
      2,
    );
    expect(page.rows).toEqual([{ _id: 'r00' }, { _id: 'r01' }]);
  });
});
