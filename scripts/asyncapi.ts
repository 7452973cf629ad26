/**
 * pnpm asyncapi        writes deploy/asyncapi.json from the event declarations
 * pnpm asyncapi:check  fails when the committed copy differs from what the declarations produce
 */
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { buildAsyncApi } from '@platform/contracts';

const file = join(__dirname, '..', 'deploy', 'asyncapi.json');
const doc = JSON.stringify(buildAsyncApi(), null, 2) + '\n';
const mode = process.argv[2] ?? 'check';
if (mode === 'write') {
  writeFileSync(file, doc);
  console.log(`wrote ${file}`);
} else {
  const current = existsSync(file) ? readFileSync(file, 'utf8') : '';
  if (current !== doc) {
    console.error('deploy/asyncapi.json is out of date with libs/contracts: run `pnpm asyncapi` and commit the result');
    process.exit(1);
  }
  console.log('deploy/asyncapi.json is up to date');
}
