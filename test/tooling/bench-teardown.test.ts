import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mongoose from 'mongoose';
import { ensureInfra, processAlive, repoRoot } from '@platform/testkit';
import { atTeardown, recordRun, sweepEarlierRuns, teardown } from '../../scripts/bench/teardown';

const { MongoClient } = mongoose.mongo;
const mongoUrl = () => ensureInfra().MONGO_URL;

async function databaseNames(prefix: string): Promise<string[]> {
  const c = await MongoClient.connect(mongoUrl());
  try {
    const { databases } = await c.db().admin().listDatabases({ nameOnly: true });
    return databases.map((d) => d.name).filter((n) => n.startsWith(prefix));
  } finally {
    await c.close();
  }
}

async function createDatabase(name: string): Promise<void> {
  const c = await MongoClient.connect(mongoUrl());
  try {
    await c.db(name).collection('rows').insertOne({ n: 1 });
  } finally {
    await c.close();
  }
}

/** The pid of a process that has exited. */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '']).pid!;
}

test('when earlier runs ended without dropping their databases, then the next run drops those of finished runs only, not a kept one or a running one', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'bench-runs-'));
  const tag = `bench_t${Date.now().toString(36)}`;
  const [dead, kept, running] = ['dead', 'kept', 'running'].map((k) => `${tag}${k}`) as [string, string, string];
  try {
    for (const prefix of [dead, kept, running]) await createDatabase(`${prefix}_events_ingest`);
    await createDatabase(`${dead}_grown_webhook_dispatcher`);
    const gone = deadPid();
    recordRun(dir, 'dead', { pid: gone, dbPrefix: dead, keep: false });
    recordRun(dir, 'kept', { pid: gone, dbPrefix: kept, keep: true });
    recordRun(dir, 'running', { pid: process.pid, dbPrefix: running, keep: false });

    await expect(sweepEarlierRuns(dir, mongoUrl())).resolves.toEqual([dead]);

    expect((await databaseNames(tag)).sort()).toEqual([`${kept}_events_ingest`, `${running}_events_ingest`]);
    expect(readdirSync(dir).sort()).toEqual(['kept.json', 'running.json']);
  } finally {
    const c = await MongoClient.connect(mongoUrl());
    for (const name of await databaseNames(tag)) await c.db(name).dropDatabase();
    await c.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('when pnpm bench is interrupted (Ctrl-C), then it stops every process it started, removes their NATS stores and drops its databases before it exits', async () => {
  // As scripts/bench.sh runs it, in a process group of its own: Ctrl-C signals the whole group, the stack's processes too.
  const bench = spawn(process.execPath, ['--import', 'tsx', 'scripts/bench/main.ts'], {
    cwd: repoRoot,
    env: { ...process.env, BENCH_QUICK: '1', BENCH_SECTIONS: 'drift', BENCH_DRIFT_RUNS: '1000' },
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let log = '';
  const exited = new Promise<number | null>((resolve) => bench.once('exit', (code) => resolve(code)));
  // Interrupted in the middle of its rows: once the stack is up and the first B run is reported.
  await new Promise<void>((resolve, reject) => {
    bench.stderr!.on('data', (d: Buffer) => {
      log += String(d);
      if (log.includes('B again, run 1')) resolve();
    });
    void exited.then(() => reject(new Error(`the bench ended before its first row:\n${log}`)));
  });
  const runId = /run (\w+): /.exec(log)![1]!;
  const record = JSON.parse(readFileSync(join(repoRoot, '.bench', 'runs', `${runId}.json`), 'utf8')) as {
    pid: number;
    dbPrefix: string;
  };
  const childrenDir = join(repoRoot, '.infra', 'run', 'children');
  const children = readdirSync(childrenDir)
    .map(
      (f) => JSON.parse(readFileSync(join(childrenDir, f), 'utf8')) as { pid: number; owner: number; leaves?: string },
    )
    .filter((c) => c.owner === record.pid);
  const stores = children.flatMap((c) => (c.leaves ? [c.leaves] : []));
  // The stack's six processes, the bare server and the NATS server, each with its store.
  expect(children.length).toBeGreaterThanOrEqual(8);
  expect(stores.length).toBe(1);
  expect(stores.every((s) => existsSync(s))).toBe(true);
  expect((await databaseNames(`${record.dbPrefix}_`)).length).toBeGreaterThan(0);

  process.kill(-bench.pid!, 'SIGINT');

  await expect(exited).resolves.toBe(130);
  expect(children.filter((c) => processAlive(c.pid))).toEqual([]);
  expect(stores.filter((s) => existsSync(s))).toEqual([]);
  expect(await databaseNames(`${record.dbPrefix}_`)).toEqual([]);
  expect(existsSync(join(repoRoot, '.bench', 'runs', `${runId}.json`))).toBe(false);
}, 180_000);

test("when the run ends while a signal's teardown is under way, then both wait for every step, each run once, newest first", async () => {
  const order: string[] = [];
  let release!: () => void;
  const stackStopping = new Promise<void>((resolve) => (release = resolve));
  atTeardown('databases', () => order.push('databases'));
  const stopStack = atTeardown('stack', async () => {
    order.push('stack stopping');
    await stackStopping;
    order.push('stack stopped');
  });
  const bySignal = teardown(() => undefined);
  let endDone = false;
  const byEnd = teardown(() => undefined).then(() => (endDone = true));
  // Every callback queued so far has run: the stack is still stopping, nothing else has started.
  await new Promise((resolve) => setImmediate(resolve));
  expect(order).toEqual(['stack stopping']);
  expect(endDone).toBe(false);

  release();
  await Promise.all([bySignal, byEnd, stopStack()]);

  expect(order).toEqual(['stack stopping', 'stack stopped', 'databases']);
});
