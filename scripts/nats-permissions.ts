/**
 * `pnpm nats:permissions` writes deploy/nats/permissions.json, the bus's permission table, from the declarations in
 * libs/contracts (operations, internal calls, notices, events, streams, durables: `busPermissions()`);
 * `pnpm nats:permissions:check` fails when the committed file differs (part of `pnpm check`). The credentials are
 * issued from that file (`pnpm nats:credentials init`).
 */
import { join } from 'node:path';
import { busPermissions } from '@platform/contracts';
import { writeOrCheck } from './generated-file';

const table = `${JSON.stringify({ generatedBy: 'pnpm nats:permissions (from libs/contracts; do not edit)', identities: busPermissions() }, null, 2)}\n`;
writeOrCheck(process.argv[2] ?? 'write', join(__dirname, '..', 'deploy', 'nats', 'permissions.json'), table, {
  source: 'libs/contracts',
  command: 'pnpm nats:permissions',
});
