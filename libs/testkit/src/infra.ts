import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { issuedFor, type PermissionTable } from '@platform/nats-auth';

export const repoRoot = join(__dirname, '..', '..', '..');

export interface InfraEnv {
  NATS_URL: string;
  REDIS_URL: string;
  MONGO_URL: string;
}

export function readEnvFile(path: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!existsSync(path)) return out;
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}

/**
 * The credential set of this checkout (`scripts/infra.sh up` writes it with `pnpm nats:credentials init`): every NATS
 * server the tests start includes its auth.conf, and every client connects with one of its `.creds` files.
 */
export function natsAuthDir(): string {
  return process.env.NATS_AUTH_DIR ?? join(repoRoot, '.local', 'nats');
}

/** Whether the checkout's NATS credential set was issued for its permission table (deploy/nats/permissions.json). */
function credentialsCurrent(): boolean {
  const table = JSON.parse(
    readFileSync(join(repoRoot, 'deploy', 'nats', 'permissions.json'), 'utf8'),
  ) as PermissionTable;
  return issuedFor(natsAuthDir(), table);
}

/**
 * The real servers: URLs from the environment when all three are given, otherwise
 * `scripts/infra.sh up` starts (or reuses) nats-server, redis-server and FerretDB and writes .infra/env.
 */
export function ensureInfra(): InfraEnv {
  if (process.env.NATS_URL && process.env.REDIS_URL && process.env.MONGO_URL) {
    // Servers given: only the credential set is this checkout's to keep current (scripts/infra.sh up reissues it).
    if (!credentialsCurrent())
      execFileSync('bash', [join(repoRoot, 'scripts', 'infra.sh'), 'credentials'], {
        stdio: ['ignore', 'inherit', 'inherit'],
      });
    return { NATS_URL: process.env.NATS_URL, REDIS_URL: process.env.REDIS_URL, MONGO_URL: process.env.MONGO_URL };
  }
  execFileSync('bash', [join(repoRoot, 'scripts', 'infra.sh'), 'up'], { stdio: ['ignore', 'inherit', 'inherit'] });
  const env = readEnvFile(join(repoRoot, '.infra', 'env'));
  if (!env.NATS_URL || !env.REDIS_URL || !env.MONGO_URL) throw new Error('scripts/infra.sh did not write .infra/env');
  return { NATS_URL: env.NATS_URL, REDIS_URL: env.REDIS_URL, MONGO_URL: env.MONGO_URL };
}
