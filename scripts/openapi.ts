/**
 * pnpm openapi        writes deploy/openapi.json from the operation declarations
 * pnpm openapi:check  fails when the committed copy differs from what the declarations produce
 */
import { join } from 'node:path';
import { buildOpenApi } from '@platform/contracts';
import { writeOrCheck } from './generated-file';

const doc = JSON.stringify(buildOpenApi(), null, 2) + '\n';
writeOrCheck(process.argv[2] ?? 'check', join(__dirname, '..', 'deploy', 'openapi.json'), doc, {
  source: 'libs/contracts',
  command: 'pnpm openapi',
});
