import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(__dirname, '..');

/**
 * The two commands of a file the repository generates and commits (`pnpm openapi` and `pnpm openapi:check`, and the
 * like): `write` writes `content` to `file`; `check` exits 1 when the committed file differs from it, saying which
 * command writes it.
 */
export function writeOrCheck(
  mode: string,
  file: string,
  content: string,
  from: { source: string; command: string },
): void {
  const name = relative(root, file);
  if (mode === 'write') {
    writeFileSync(file, content);
    console.log(`wrote ${file}`);
    return;
  }
  const committed = existsSync(file) ? readFileSync(file, 'utf8') : '';
  if (committed !== content) {
    console.error(`${name} is out of date with ${from.source}: run \`${from.command}\` and commit the result`);
    process.exit(1);
  }
  console.log(`${name} is up to date`);
}
