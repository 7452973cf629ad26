/**
 * `pnpm secrets:reencrypt [--check] [--env-file FILE]...`: seals every sealed value of every service again under the
 * newest key of ENCRYPTION_KEYS, bound to its record (docs/security.md, "Sealed values"). Run it after deploying a new
 * key first in the list, before dropping the old one; values of the format before bindings are converted too.
 *
 *   --check      change nothing: count the values that are not under the newest key yet (exit 1 when there are any)
 *   --env-file   read variables from a file first (`.local/secrets.env` and `.infra/env` for the local stack)
 *
 * Reads MONGO_URL, MONGO_DB_PREFIX and ENCRYPTION_KEYS (or ENCRYPTION_KEY), like the services. Idempotent: a value
 * under the newest key is left alone, so a second run reports nothing to do. Exit 0 when every value is under the
 * newest key; 1 when some value does not open (listed, left as it is) or was changed while it ran (run it again).
 * In the image: `node /app/tools/secrets-reencrypt.js` (deploy/Dockerfile); in Kubernetes the suspended CronJob
 * `secrets-reencrypt` (deploy/k8s/base/secrets-reencrypt.yaml).
 */
import { parseArgs } from 'node:util';
import {
  encryptionConfig,
  loadConfig,
  mongoConfig,
  sealingKeysOf,
  withSealingKeys,
  type EncryptionConfig,
} from '../libs/config/src';
import { connectMongo, reencryptCollection, type ReencryptReport, type SealedFields } from '../libs/mongo/src';
import type { BackendServiceName } from '@platform/contracts';
import { SecretBox } from '@platform/secrets';
import { setLogLevel } from '../libs/logger/src';
import { sealedValues as chatapp } from '../services/chatapp/src/data/sealed-values';
import { sealedValues as credentialGateway } from '../services/credential-gateway/src/data/sealed-values';
import { sealedValues as management } from '../services/management/src/data/sealed-values';

/** Each service that stores sealed values, with where it keeps them (its own database). */
const SERVICES: Array<{ service: BackendServiceName; collections: ReadonlyArray<SealedFields<any>> }> = [
  { service: 'management', collections: management },
  { service: 'chatapp', collections: chatapp },
  { service: 'credential-gateway', collections: credentialGateway },
];

export interface ServiceReport {
  service: string;
  collections: ReencryptReport[];
}

/** Re-encrypts (or with `check`, counts) the sealed values of every service. */
export async function reencryptAll(
  env: Record<string, string | undefined>,
  opts: { check?: boolean } = {},
): Promise<ServiceReport[]> {
  const config = loadConfig(withSealingKeys(mongoConfig.extend(encryptionConfig.shape)), env);
  const keys = sealingKeysOf(config as EncryptionConfig);
  if (!('keys' in keys)) throw new Error(`${keys.problem.path}: ${keys.problem.message}`);
  const box = new SecretBox(keys.keys);
  const out: ServiceReport[] = [];
  for (const { service, collections } of SERVICES) {
    const db = await connectMongo({ url: config.MONGO_URL, dbPrefix: config.MONGO_DB_PREFIX, service, poolSize: 2 });
    try {
      const reports: ReencryptReport[] = [];
      for (const decl of collections) reports.push(await reencryptCollection(db, box, decl, { write: !opts.check }));
      out.push({ service, collections: reports });
    } finally {
      await db.close();
    }
  }
  return out;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: process.argv.slice(2).filter((a) => a !== '--'),
    options: { check: { type: 'boolean' }, 'env-file': { type: 'string', multiple: true } },
  });
  for (const file of values['env-file'] ?? []) process.loadEnvFile(file);
  // The connections' own notices (a database closed at the end) are not the command's output.
  setLogLevel(process.env.LOG_LEVEL ?? 'error');
  const check = Boolean(values.check);
  const reports = await reencryptAll(process.env, { check });
  let pending = 0;
  let problems = 0;
  for (const { service, collections } of reports) {
    for (const r of collections) {
      if (check) pending += r.stale;
      problems += r.failed.length + r.changedMeanwhile;
      const done = check ? `${r.stale} not under the newest key` : `${r.resealed} sealed again under the newest key`;
      console.log(
        `${service} ${r.collection}: ${r.values} sealed values, ${done}, ${r.failed.length} do not open, ${r.changedMeanwhile} changed meanwhile`,
      );
      for (const f of r.failed) console.log(`  ${f.recordId} ${f.field}: ${f.reason}`);
    }
  }
  if (problems)
    console.log('Some values were left as they are: fix what is listed (or run again for values changed meanwhile).');
  else if (!pending)
    console.log('Every sealed value is under the newest key: older keys can be dropped from ENCRYPTION_KEYS.');
  return problems || pending ? 1 : 0;
}

if (require.main === module) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`secrets:reencrypt: ${(err as Error).message ?? err}\n`);
      process.exit(2);
    },
  );
}
