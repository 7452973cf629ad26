/**
 * One-off: moves services/management from feature folders (src/<feature>/…) into the tiers every other service uses
 * (STYLE.md §1, docs/contributing.md "Layout of a service"), and rewrites every import of a moved file in the repository.
 * Written to run on whatever main looks like when it runs, so it works from the files it finds, not from a list:
 *
 *   src/<feature>/<name>.handlers.ts                 → src/handlers/<name>.ts
 *   src/<feature>/<name>.{model,repo,store}.ts       → src/data/<name>.{model,repo,store}.ts
 *   src/<feature>/<name>.d.ts                        → src/types/<name>.d.ts   (declarations for untyped packages)
 *   src/<feature>/index.ts                           → src/wiring/<feature>.ts (wiring: builds repos, registers handlers)
 *   src/<feature>/<name>.ts (anything else)          → src/domain/<name>.ts
 *   src/main.ts, src/config.ts, src/service.ts, and what is already in a tier folder: stay
 *   a file at the top of src/ named in DECIDED below: where it says
 *
 * It refuses (exit 2, nothing changed) when it meets a file whose role it cannot tell (a file at the top of src/ that is
 * not listed, a folder inside a feature folder, a test or a non-TypeScript file under src/), or when two files would
 * land on the same name. Imports are moved with ts-morph (every *.ts file of the repository is looked at, tests and
 * scripts included); mentions of a moved file's path in comments and docs are rewritten as text; mentions of a
 * feature folder that no single file replaces are listed for a person to reword.
 *
 *   pnpm exec tsx scripts/once/management-tiers.ts [--dry-run]
 *
 * Run again on a tree already in tiers, it says so and changes nothing. Delete this script once it has run on main.
 */
import { existsSync, readdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join, posix, relative, sep } from 'node:path';
import { Project, QuoteKind } from 'ts-morph';

const root = join(__dirname, '..', '..');
const SERVICE = 'services/management';
const SRC = `${SERVICE}/src`;
/** Files at the top of src/ that stay where they are (STYLE.md §1). */
const STAY = new Set(['main.ts', 'config.ts', 'service.ts']);
/** Folders of src/ that are tiers already: their files stay. */
const TIERS = new Set(['handlers', 'domain', 'data', 'types', 'wiring']);
/** Other files at the top of src/ whose tier a person decided (path relative to src/), with the reason. */
const DECIDED: Record<string, { to: string; why: string }> = {
  // Names the sealed fields of stored documents, taken from the models (for pnpm secrets:reencrypt): data.
  'sealed-values.ts': { to: 'data/sealed-values.ts', why: 'data: the sealed fields of the models' },
};
/** Text files where a moved file's path may be mentioned (comments, docs, configuration). */
const TEXT_FILE = /\.(ts|mts|cts|js|mjs|cjs|md|json|ya?ml|sh)$/;

interface Move {
  from: string; // repository-relative, posix
  to: string;
  why: string;
}

class Refusal extends Error {}

const toPosix = (p: string) => p.split(sep).join('/');
const SELF = toPosix(relative(root, __filename));
const srcPath = (rel: string) => posix.join(SRC, rel);

/** Where a file of a feature folder goes, by its role; undefined when its role cannot be told. */
function tierOf(feature: string, file: string): { to: string; why: string } | undefined {
  if (file.endsWith('.test.ts') || !file.endsWith('.ts')) return undefined;
  if (file.endsWith('.d.ts')) return { to: `types/${file}`, why: 'declarations' };
  if (file === 'index.ts') return { to: `wiring/${feature}.ts`, why: 'wiring of the feature' };
  if (file.endsWith('.handlers.ts')) return { to: `handlers/${file.replace(/\.handlers\.ts$/, '.ts')}`, why: 'handlers' };
  if (/\.(model|repo|store)\.ts$/.test(file)) return { to: `data/${file}`, why: 'data' };
  return { to: `domain/${file}`, why: 'domain' };
}

/** Every move the tree asks for; throws a Refusal naming each file whose role cannot be told. */
function planMoves(): Move[] {
  const srcDir = join(root, SRC);
  if (!existsSync(srcDir)) throw new Refusal(`${SRC} does not exist: run this from a checkout of the repository`);
  const moves: Move[] = [];
  const unknown: string[] = [];
  for (const entry of readdirSync(srcDir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const rel = entry.name;
    if (entry.isFile()) {
      if (STAY.has(rel)) continue;
      const decided = DECIDED[rel];
      if (decided) moves.push({ from: srcPath(rel), to: srcPath(decided.to), why: decided.why });
      else unknown.push(`${srcPath(rel)}: a file at the top of src/ that is not one of ${[...STAY].join(', ')} (add it to DECIDED with its tier)`);
      continue;
    }
    if (!entry.isDirectory() || TIERS.has(rel)) continue;
    for (const inner of readdirSync(join(srcDir, rel), { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = srcPath(`${rel}/${inner.name}`);
      const tier = inner.isFile() ? tierOf(rel, inner.name) : undefined;
      if (tier) moves.push({ from: path, to: srcPath(tier.to), why: tier.why });
      else unknown.push(`${path}: ${inner.isDirectory() ? 'a folder inside a feature folder' : 'neither handlers, data, domain, wiring nor declarations'}`);
    }
  }
  if (unknown.length > 0) throw new Refusal(`cannot tell the role of:\n  ${unknown.join('\n  ')}`);
  const byTarget = new Map<string, string>();
  const clashes: string[] = [];
  for (const m of moves) {
    const other = byTarget.get(m.to);
    if (other) clashes.push(`${other} and ${m.from} would both become ${m.to}`);
    else if (existsSync(join(root, m.to))) clashes.push(`${m.from} would become ${m.to}, which exists`);
    byTarget.set(m.to, m.from);
  }
  if (clashes.length > 0) throw new Refusal(`two files would have the same name (rename one first):\n  ${clashes.join('\n  ')}`);
  return moves;
}

/** Moves the files with ts-morph, which rewrites the module specifiers of every file that imports a moved one. */
function moveWithImports(moves: Move[]): string[] {
  const project = new Project({
    tsConfigFilePath: join(root, 'tsconfig.json'),
    skipAddingFilesFromTsConfig: true,
    manipulationSettings: { quoteKind: QuoteKind.Single },
  });
  project.addSourceFilesAtPaths([`${root}/**/*.{ts,mts,cts}`, `!${root}/**/node_modules/**`, `!${root}/.infra/**`, `!${root}/**/dist/**`]);
  const before = new Map(project.getSourceFiles().map((f) => [f, f.getFullText()]));
  for (const m of moves) project.getSourceFileOrThrow(join(root, m.from)).move(join(root, m.to), { overwrite: false });
  const changed = [...before].filter(([f, text]) => f.getFullText() !== text).map(([f]) => toPosix(relative(root, f.getFilePath())));
  project.saveSync();
  return changed;
}

function trackedTextFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' });
  return out.split('\0').filter((f) => TEXT_FILE.test(f) && existsSync(join(root, f)) && statSync(join(root, f)).isFile());
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Rewrites mentions of a moved file's path: the full path anywhere (`services/management/src/audit/audit-log.ts`),
 * and inside the service the path from src/ (`audit/audit-log.handlers.ts`). Returns the files changed.
 */
function rewriteMentions(moves: Move[]): string[] {
  const changed: string[] = [];
  const rules = moves.flatMap((m) => {
    const full = [m.from, m.from.replace(/\.ts$/, '')];
    const fromSrc = m.from.slice(SRC.length + 1);
    return [
      { pattern: new RegExp(`${escapeRe(full[0]!)}\\b`, 'g'), to: m.to },
      { pattern: new RegExp(`${escapeRe(full[1]!)}(?![\\w.-])`, 'g'), to: m.to.replace(/\.ts$/, '') },
      { pattern: new RegExp(`(?<![\\w./-])${escapeRe(fromSrc)}\\b`, 'g'), to: m.to.slice(SRC.length + 1), inService: true },
    ];
  });
  for (const file of trackedTextFiles()) {
    if (file === SELF) continue;
    const text = readFileSync(join(root, file), 'utf8');
    let next = text;
    for (const r of rules) if (!r.inService || file.startsWith(`${SERVICE}/`)) next = next.replace(r.pattern, r.to);
    if (next !== text) {
      writeFileSync(join(root, file), next);
      changed.push(file);
    }
  }
  return changed;
}

/** Mentions of a feature folder left after the move (a folder is spread over several tiers: a person rewords them). */
function folderMentions(features: string[]): string[] {
  if (features.length === 0) return [];
  const pattern = new RegExp(`${escapeRe(SRC)}/(${features.map(escapeRe).join('|')})(/|\\b)|feature folder`, 'i');
  const found: string[] = [];
  for (const file of trackedTextFiles()) {
    if (file === SELF) continue;
    readFileSync(join(root, file), 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (pattern.test(line)) found.push(`${file}:${i + 1}: ${line.trim()}`);
      });
  }
  return found;
}

function removeEmptyFolders(features: string[]): void {
  for (const f of features) {
    const dir = join(root, SRC, f);
    if (existsSync(dir) && readdirSync(dir).length === 0) rmdirSync(dir);
  }
}

function main(): void {
  const dryRun = process.argv.includes('--dry-run');
  const moves = planMoves();
  if (moves.length === 0) {
    console.log(`${SRC} is in tiers already: nothing to move.`);
    return;
  }
  const inSrc = (p: string) => p.slice(SRC.length + 1);
  const width = Math.max(...moves.map((m) => inSrc(m.from).length));
  console.log(`${SRC}/:`);
  for (const m of moves) console.log(`  ${inSrc(m.from).padEnd(width)}  →  ${inSrc(m.to)}   (${m.why})`);
  if (dryRun) {
    console.log(`\n${moves.length} files would move (--dry-run: nothing changed).`);
    return;
  }
  const features = [...new Set(moves.map((m) => m.from.slice(SRC.length + 1).split('/')).filter((p) => p.length > 1).map((p) => p[0]!))];
  const importing = moveWithImports(moves);
  removeEmptyFolders(features);
  const mentioning = rewriteMentions(moves);
  console.log(`\nmoved ${moves.length} files; imports rewritten in ${importing.length} files; path mentions rewritten in ${mentioning.length} files.`);
  const left = folderMentions(features);
  if (left.length > 0) console.log(`\nMentions of the old feature folders to reword by hand:\n  ${left.join('\n  ')}`);
  console.log('\nNext: pnpm typecheck && pnpm boundaries, then the management tests.');
}

try {
  main();
} catch (err) {
  if (!(err instanceof Refusal)) throw err;
  console.error(`management-tiers: refusing to move anything: ${err.message}`);
  process.exit(2);
}
