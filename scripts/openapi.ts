/**
 * pnpm openapi        writes deploy/openapi.json from the operation declarations
 * pnpm openapi:check  fails when the committed copy differs from what the declarations produce
 */
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { buildOpenApi } from '@platform/contracts';

const file = join(__dirname, '..', 'deploy', 'openapi.json');
const doc = JSON.stringify(buildOpenApi(), null, 2) + '\n';
const mode = process.argv[2] ?? 'check';
if (mode === 'write') {
  writeFileSync(file, doc);
  console.log(`wrote ${file}`);
} else {
  const current = existsSync(file) ? readFileSync(file, 'utf8') : '';
  if (current !== doc) {
    console.error('deploy/openapi.json is out of date with libs/contracts: run `pnpm openapi` and commit the result');
    process.exit(1);
  }
  console.log('deploy/openapi.json is up to date');
}
