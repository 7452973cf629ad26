/**
 * `pnpm nats:permissions` writes deploy/nats/permissions.json, the bus's permission table, from the declarations in
 * libs/contracts (operations, internal calls, notices, events, streams, durables: `busPermissions()`);
 * `pnpm nats:permissions:check` fails when the committed file differs (part of `pnpm check`). The credentials are
 * issued from that file (`pnpm nats:credentials init`).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { busPermissions } from '@platform/contracts';

const file = join(__dirname, '..', 'deploy', 'nats', 'permissions.json');
const table = `${JSON.stringify({ generatedBy: 'pnpm nats:permissions (from libs/contracts; do not edit)', identities: busPermissions() }, null, 2)}\n`;
const mode = process.argv[2] ?? 'write';
if (mode === 'write') {
  writeFileSync(file, table);
  console.log(`wrote ${file}`);
} else {
  let committed = '';
  try {
    committed = readFileSync(file, 'utf8');
  } catch {
    /* missing: stale */
  }
  if (committed !== table) {
    console.error('deploy/nats/permissions.json is stale: run `pnpm nats:permissions` and commit the result');
    process.exit(1);
  }
  console.log('deploy/nats/permissions.json is up to date');
}
