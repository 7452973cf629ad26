/**
 * pnpm chaos: faults under load on stacks of its own, then a table: fault, requests sent, accepted, lost,
 * duplicated, 5xx (split into requests safe to repeat and the others), no answer, time to recover (also written to
 * .infra/chaos/last.json and last.md, git-ignored).
 *
 *   SIGKILL of management, events-ingest, analytics, evals and webhook-dispatcher under load (each restarted at once);
 *   NATS stopped for 5 s and started again; the database restarted (a private PostgreSQL and FerretDB of this run,
 *   on ports of their own: the shared infrastructure is never stopped); one node of a three-node NATS cluster
 *   (streams replicated 3 times) killed during ingest and webhook delivery.
 *
 *   Redis (a private redis-server of the run) stopped for 10 s with its data kept, and restarted empty, under creates
 *   with an Idempotency-Key sent twice and the rate limits on.
 *
 *   events-ingest, then the webhook dispatcher, cut off from NATS for 30 s (each reaches NATS through a TCP proxy of
 *   the run, which is cut: connections dropped, new ones refused) while the rest run.
 *
 *   A slow database: 200 ms added to every round trip of a private FerretDB (a TCP proxy in front of it) for 20 s
 *   under 48 writers; services and gateway shed with 503 + Retry-After (bounded requests in flight, deadlines).
 *
 *   A day in ten minutes (soak): mixed traffic (run events with a webhook, analytics batches, management reads and
 *   writes) over ten projects at half the rate a closed-loop probe reached, for --soak-minutes (default 10), on
 *   services with the production image's node flags: resident memory of every process and p99 per interval (of all
 *   operations and of each kind) in the JSON and in docs/images/soak.png; each project's delivery log and counters
 *   checked against what was stored.
 *
 *   Two replicas of management, events-ingest, analytics and evals (a stack of its own): for each, SIGKILL of one
 *   replica (started again) and a rolling restart (a new replica started and ready before the old one gets SIGTERM,
 *   in turn, as a Deployment does); then two gateways behind a balancer that routes to ready gateways only (/readyz
 *   every 100 ms), restarted in turn. Targets: 0 5xx for requests safe to repeat after a SIGKILL, and no failed
 *   request at all in a rolling restart (a missed target fails the run).
 *
 *   --only <name>   run the faults whose name contains it;  --total N   writes per fault (default 600);
 *   --soak-minutes N   length of the soak (default 10)
 *
 * "accepted" counts distinct writes the API acknowledged (2xx; a 409 on a retried create means an earlier attempt
 * was stored); "lost" are accepted writes missing afterwards (read back from the owning service's database, and
 * for delivery faults also from what the webhook receiver got); "duplicated" are rows or deliveries beyond one per
 * accepted write; "5xx" counts server-error answers; "time to recover" runs from the end of the fault (the kill, or
 * the moment the stopped part is back) to the first write acknowledged after it (for delivery faults, to the first
 * webhook delivery after it, when that is later). Duplicated deliveries that repeat a webhook-id are marked: webhooks
 * are at least once (a delivery in flight when the dispatcher is SIGKILLed is sent again with the same webhook-id,
 * which receivers dedupe on); the run fails on a failed phase, a lost write or any other duplicate.
 *
 * The runner: run.ts (settings, bounds), report.ts (rows, phases, table), load.ts, readback.ts, stacks.ts,
 * process-faults.ts, workloads.ts; each family of faults in rows/<family>.ts.
 *
 * Every phase (stack start, fault under load, read-back, teardown) has a time bound: a phase over its bound is a
 * failed row of the table, never a hang, and the run as a whole has a bound too.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { ensureInfra, repoRoot, startReceiver } from '@platform/testkit';
import { bounded, failedRow, PhaseTimeout, report } from './report';
import { BOUND } from './run';
import { clusterRows } from './rows/cluster';
import { databaseRows } from './rows/database';
import { killRows } from './rows/kills';
import { partitionRows } from './rows/partition';
import { redisRows } from './rows/redis';
import { replicaRows } from './rows/replicas';
import { slowDatabaseRows } from './rows/slow-database';
import { soakRows } from './rows/soak';

async function main() {
  // The run as a whole is bounded too: past it, the table so far is printed and the run ends.
  setTimeout(() => {
    failedRow('the whole run', new PhaseTimeout(`exceeded ${BOUND.run / 60_000} min`));
    process.exit(report());
  }, BOUND.run).unref();

  ensureInfra();
  execFileSync(process.execPath, [join(repoRoot, 'scripts', 'build-service.mjs')], { stdio: 'inherit' });
  const receiver = await startReceiver();

  await killRows(receiver);
  await replicaRows();
  await databaseRows();
  await redisRows();
  await partitionRows(receiver);
  await slowDatabaseRows();
  await soakRows(receiver);
  await clusterRows(receiver);

  await bounded('close the receiver', 10_000, () => receiver.close()).catch((err) =>
    failedRow('close the receiver', err),
  );
  return report();
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    failedRow('the whole run', err);
    process.exit(report());
  },
);
