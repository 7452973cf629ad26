import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * `pnpm boundaries` (in `pnpm check`) run on a small repository of our layout: one lib and one service in tiers, with
 * the repository's .dependency-cruiser.cjs and the exact command package.json runs.
 */
const root = join(__dirname, '..', '..');
const command = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
  .scripts.boundaries!;

const inTiers: Record<string, string> = {
  'libs/words/src/index.ts': `export const upper = (s: string) => s.toUpperCase();\n`,
  'services/demo/src/service.ts': `import { thingRepo } from './data/thing.repo';\nimport { registerThingHandlers } from './handlers/things';\nexport const start = () => registerThingHandlers({ things: thingRepo() });\n`,
  'services/demo/src/handlers/things.ts': `import { nameThing, type ThingDeps } from '../domain/things';\nexport const registerThingHandlers = (deps: ThingDeps) => nameThing(deps, 't1');\n`,
  'services/demo/src/domain/things.ts': `import { upper } from '../../../../libs/words/src';\nimport type { StoredThing, ThingRepo } from '../data/thing.repo';\nexport interface ThingDeps { things: ThingRepo }\nexport const nameThing = (deps: ThingDeps, id: string): StoredThing | null => deps.things.find(upper(id));\n`,
  'services/demo/src/data/thing.model.ts': `export interface ThingDoc { _id: string; name: string; pendingEvents?: unknown[] }\nexport const things: ThingDoc[] = [];\n`,
  'services/demo/src/data/thing.repo.ts': `import { things } from './thing.model';\nexport interface StoredThing { _id: string; name: string }\nexport const thingRepo = () => ({ find: (id: string): StoredThing | null => things.find((t) => t._id === id) ?? null });\nexport type ThingRepo = ReturnType<typeof thingRepo>;\n`,
};

let dirs: string[] = [];
afterEach(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

function boundaries(files: Record<string, string>): { status: number | null; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'boundaries-'));
  dirs.push(dir);
  copyFileSync(join(root, '.dependency-cruiser.cjs'), join(dir, '.dependency-cruiser.cjs'));
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: { strict: true, module: 'commonjs', moduleResolution: 'node', target: 'es2022' },
    }),
  );
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  // The command's --cache asks git which files changed since the last commit.
  const git = (...args: string[]) =>
    spawnSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@example.invalid', ...args], { cwd: dir });
  git('init', '-q');
  git('add', '-A');
  git('commit', '-q', '--no-verify', '-m', 'fixture');
  const r = spawnSync('sh', ['-c', command], {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, PATH: `${join(root, 'node_modules', '.bin')}:${process.env.PATH}` },
  });
  return { status: r.status, output: `${r.stdout}${r.stderr}` };
}

test('when every service is in tiers and imports run handlers → domain → data, then the boundary check passes', () => {
  const r = boundaries(inTiers);
  expect(r.output).toContain('no dependency violations found');
  expect(r.status).toBe(0);
});

test('when a domain file imports a model, even for a type only, then the boundary check fails naming both files', () => {
  const r = boundaries({
    ...inTiers,
    'services/demo/src/domain/rename.ts': `import type { ThingDoc } from '../data/thing.model';\nexport const renamed = (d: ThingDoc, name: string) => ({ ...d, name });\n`,
  });
  expect(r.status).not.toBe(0);
  expect(r.output).toMatch(
    /models-only-in-data: services\/demo\/src\/domain\/rename\.ts → services\/demo\/src\/data\/thing\.model\.ts/,
  );
});

test('when two folders of a service import each other through different files (no file cycle), then the boundary check fails naming the folder cycle', () => {
  const r = boundaries({
    ...inTiers,
    // domain/things.ts → clients/labels.ts, and clients/format.ts → domain/names.ts: no file imports itself back.
    'services/demo/src/domain/things.ts': `import { label } from '../clients/labels';\n${inTiers['services/demo/src/domain/things.ts']}export const labelled = label;\n`,
    'services/demo/src/clients/labels.ts': `export const label = (s: string) => \`[\${s}]\`;\n`,
    'services/demo/src/clients/format.ts': `import { thingName } from '../domain/names';\nexport const format = (s: string) => thingName(s);\n`,
    'services/demo/src/domain/names.ts': `export const thingName = (s: string) => s.trim();\n`,
  });
  expect(r.status).not.toBe(0);
  expect(r.output).toMatch(
    /no-folder-cycles: services\/demo\/src\/domain → \s*services\/demo\/src\/clients →\s*services\/demo\/src\/domain/,
  );
  expect(r.output).not.toContain('no-circular');
});

test('when two libs import each other through different files, then the boundary check fails naming the folder cycle', () => {
  const r = boundaries({
    ...inTiers,
    'libs/words/src/plural.ts': `import { count } from '../../numbers/src/count';\nexport const plural = (s: string, n: number) => (count(n) === 1 ? s : \`\${s}s\`);\n`,
    'libs/numbers/src/count.ts': `export const count = (n: number) => Math.abs(n);\n`,
    'libs/numbers/src/spell.ts': `import { upper } from '../../words/src';\nexport const spell = (n: number) => upper(String(n));\n`,
  });
  expect(r.status).not.toBe(0);
  expect(r.output).toMatch(/no-folder-cycles: libs\/(words|numbers)/);
  expect(r.output).not.toContain('no-circular');
});
