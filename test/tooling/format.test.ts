import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * `pnpm format:check` (in `pnpm check`) run on a small repository with the repository's biome.json and the exact
 * command package.json runs.
 */
const root = join(__dirname, '..', '..');
const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
  .scripts;

const formatted = `export function greet(name: string): string {\n  return \`hello \${name}\`;\n}\n`;

let dirs: string[] = [];
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

function formatCheck(files: Record<string, string>): { status: number | null; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'format-'));
  dirs.push(dir);
  copyFileSync(join(root, 'biome.json'), join(dir, 'biome.json'));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  spawnSync('git', ['init', '-q'], { cwd: dir });
  const r = spawnSync('sh', ['-c', scripts['format:check']!], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, PATH: `${join(root, 'node_modules', '.bin')}:${process.env.PATH}` },
  });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

test('pnpm check runs the format check', () => {
  expect(scripts.check).toContain('pnpm format:check');
});

test('when every file is formatted, then the format check passes', () => {
  const r = formatCheck({ 'libs/words/src/index.ts': formatted });
  expect(r.output).toMatch(/Checked 1 file/);
  expect(r.status).toBe(0);
});

test('when a file is not formatted, then the format check fails naming it', () => {
  const r = formatCheck({
    'libs/words/src/index.ts': formatted,
    'services/demo/src/planted.ts': `export const  planted = { a:1,b :"two" }\n`,
  });
  expect(r.status).not.toBe(0);
  expect(r.output).toContain('services/demo/src/planted.ts');
  expect(r.output).not.toContain('libs/words/src/index.ts');
});
