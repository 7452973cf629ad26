/**
 * `pnpm migrate [--env-file FILE]...`: converts the rows earlier releases wrote in a form this release no longer reads
 * (docs/operating.md, "Upgrading"). Run it once after upgrading, before or while the new release starts. Idempotent:
 * each step converts only rows still in an old form, so a second run prints zeros. It prints what each step converted.
 *
 *   --env-file   read variables from a file first (`.infra/env` for the local stack)
 *
 * Reads MONGO_URL and MONGO_DB_PREFIX like the services. Pending webhook deliveries of the releases before the job
 * stream are handed to the job stream over NATS (NATS_URL, and NATS_CREDS: the webhook-dispatcher's credential, which
 * may publish its jobs); with none left it does not connect to NATS. Sealed values of the format before record bindings
 * are converted by `pnpm secrets:reencrypt`, not here. In the image: `node /app/tools/migrate.js` (deploy/Dockerfile);
 * in Kubernetes the suspended CronJob `migrate` (deploy/k8s/base/migrate.yaml).
 */
import { parseArgs } from 'node:util';
import { baseConfig, loadConfig, mongoConfig } from '../libs/config/src';
import { connectMongo, type Connection } from '../libs/mongo/src';
import { connectNats, publisher, type Publisher } from '../libs/bus/src';
import { setLogLevel } from '../libs/logger/src';
import type { BackendServiceName } from '@platform/contracts';
import { convertBatchMarkers, packRunEventRows } from '../services/events-ingest/src/data/migrations';
import { markLiveApiKeys, moveAppEvents } from '../services/management/src/data/migrations';
import { handOverLegacyDeliveries } from '../services/webhook-dispatcher/src/data/migrations';
import { jobFromLegacy } from '../services/webhook-dispatcher/src/domain/jobs';
import { ensureJobStream, jobPartition, retryQueue } from '../services/webhook-dispatcher/src/clients/retry-queue';

type NatsConnection = Awaited<ReturnType<typeof connectNats>>;

/** One line of the report: a step of a service and what it converted. */
export interface MigrationReport {
  service: BackendServiceName;
  step: string;
  converted: string;
}

const config = mongoConfig
  .extend(baseConfig.pick({ NATS_URL: true, NATS_TLS_CA_FILE: true, JS_REPLICAS: true }).shape)
  .extend({
    NATS_CREDS: baseConfig.shape.NATS_CREDS.optional(),
  });

type Step = { step: string; run(db: Connection): Promise<string> };

/** Every step, by the service whose database it converts, in the order they run. */
function steps(nats: () => Promise<NatsConnection>): Array<{ service: BackendServiceName; steps: Step[] }> {
  return [
    {
      service: 'events-ingest',
      steps: [
        {
          step: 'runEvents batch markers of earlier releases given their rows and events',
          run: async (db) => `${await convertBatchMarkers(db)} markers`,
        },
        { step: 'runEvents rows of earlier releases packed', run: async (db) => `${await packRunEventRows(db)} rows` },
      ],
    },
    {
      service: 'management',
      steps: [
        {
          step: 'appEvents moved into the apps outbox',
          run: async (db) => {
            const r = await moveAppEvents(db);
            return `${r.moved} events moved, ${r.dropped} of changes that never landed dropped`;
          },
        },
        { step: 'apiKeys stored before `live` marked live', run: async (db) => `${await markLiveApiKeys(db)} keys` },
      ],
    },
    {
      service: 'webhook-dispatcher',
      steps: [
        {
          step: 'pending deliveries of the deliveries collection handed to the job stream',
          run: async (db) => {
            // NATS only once there is a delivery to hand over.
            let pub: Promise<Publisher> | undefined;
            const n = await handOverLegacyDeliveries(db, async (d) => {
              pub ??= nats().then(publisher);
              await retryQueue(await pub, jobPartition(d.partition)).schedule(jobFromLegacy(d), 'legacy');
            });
            return `${n} deliveries`;
          },
        },
      ],
    },
  ];
}

/** Runs every step against the databases (and NATS, when a step needs it) that `env` names. */
export async function migrateAll(env: Record<string, string | undefined>): Promise<MigrationReport[]> {
  const c = loadConfig(config, env);
  let nc: Promise<NatsConnection> | undefined;
  const nats = () => {
    if (!c.NATS_CREDS)
      throw new Error('NATS_CREDS is needed to hand deliveries to the job stream (the webhook-dispatcher credential)');
    // The job stream is made here when the new dispatcher has not made it yet (the migration may run first).
    nc ??= connectNats({
      url: c.NATS_URL,
      name: 'migrate',
      credsFile: c.NATS_CREDS,
      tlsCaFile: c.NATS_TLS_CA_FILE,
      maxReconnectAttempts: 3,
    }).then(async (conn) => {
      await ensureJobStream(conn, c.JS_REPLICAS);
      return conn;
    });
    return nc;
  };
  const out: MigrationReport[] = [];
  try {
    for (const { service, steps: list } of steps(nats)) {
      const db = await connectMongo({ url: c.MONGO_URL, dbPrefix: c.MONGO_DB_PREFIX, service, poolSize: 2 });
      try {
        for (const s of list) out.push({ service, step: s.step, converted: await s.run(db) });
      } finally {
        await db.close();
      }
    }
  } finally {
    if (nc) await (await nc).drain();
  }
  return out;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: process.argv.slice(2).filter((a) => a !== '--'),
    options: { 'env-file': { type: 'string', multiple: true } },
  });
  for (const file of values['env-file'] ?? []) process.loadEnvFile(file);
  // The connections' own notices (a database closed at the end) are not the command's output.
  setLogLevel(process.env.LOG_LEVEL ?? 'error');
  for (const r of await migrateAll(process.env)) console.log(`${r.service}: ${r.step}: ${r.converted}`);
  console.log('Every row is in the form this release reads.');
  return 0;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`migrate: ${(err as Error).message ?? err}\n`);
      process.exit(2);
    },
  );
}
