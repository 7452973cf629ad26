// The database restarted: a private PostgreSQL and FerretDB of the run (on ports of their own: the shared
// infrastructure is never stopped) down for 5 s under ingest.
import { privateDatabase, type PrivateDatabase } from '@platform/testkit';
import { bounded, failedRow, fault, rows } from '../report';
import { BOUND, say, want } from '../run';
import { type Env, newStack, stopStack } from '../stacks';
import { runEventsFault } from '../workloads';

export async function databaseRows(): Promise<void> {
  if (!want('database restarted')) return;
  const name = 'database restarted (private PostgreSQL + FerretDB down 5 s)';
  let db: PrivateDatabase | undefined;
  let env: Env | undefined;
  try {
    db = await bounded('start the private database', BOUND.stackStart, () => privateDatabase({ log: say }));
    const mongoUrl = db.url;
    env = await bounded('start the database stack', BOUND.stackStart, () =>
      newStack('db', ['management', 'run-auth', 'events-ingest'], { infra: { MONGO_URL: mongoUrl } }),
    );
    const e = env;
    const d = db;
    await fault(name, (s) => runEventsFault(name, e, (end) => d.restart(5000, end), s));
    if (rows.some((r) => r.fault === name && typeof r.lost !== 'number'))
      say(`${name}: the private database's logs\n${d.logTail(40)}`);
  } catch (err) {
    failedRow(name, err);
  } finally {
    await stopStack('database', env);
    db?.destroy();
  }
}
