/**
 * pnpm asyncapi        writes deploy/asyncapi.json from the event declarations
 * pnpm asyncapi:check  fails when the committed copy differs from what the declarations produce
 */
import { join } from 'node:path';
import { buildAsyncApi } from '@platform/contracts';
import { writeOrCheck } from './generated-file';

const doc = JSON.stringify(buildAsyncApi(), null, 2) + '\n';
writeOrCheck(process.argv[2] ?? 'check', join(__dirname, '..', 'deploy', 'asyncapi.json'), doc, {
  source: 'libs/contracts',
  command: 'pnpm asyncapi',
});
