/**
 * The boundary rule of STYLE.md §1: no NATS subject string outside libs/contracts. Every subject a service serves,
 * calls, publishes or consumes comes from a declaration there (operations, internal calls, notices, streams), so the
 * bus's permissions can be generated from them.
 *
 * Scans the *.ts files of services/ and libs/ (not libs/contracts, not test/ folders) for string and template literals
 * that look like subjects: starting with svc., internal., evt., work., webhook-jobs, $JS. or _INBOX, or templates
 * that start from a subject prefix constant (`${EVENT_SUBJECT_PREFIX}.*.*.…`). Comments are
 * not looked at. Prints file:line of each and exits 1 when there is any.
 *
 *   pnpm subjects:check
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const root = join(__dirname, '..');
const SKIP_DIRS = new Set(['node_modules', 'test', 'dist', '.turbo']);
const PREFIXES = ['svc.', 'internal.', 'evt.', 'work.', 'webhook-jobs', '$JS.', '_INBOX'];
/** A template built on a prefix constant of libs/contracts, such as `${EVENT_SUBJECT_PREFIX}.…`. */
const FROM_PREFIX_CONSTANT = /^\$\{[A-Z0-9_]*SUBJECT_PREFIX\}/;

function* tsFiles(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIP_DIRS.has(entry.name) && relative(root, path) !== join('libs', 'contracts')) yield* tsFiles(path);
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
      yield path;
    }
  }
}

function looksLikeSubject(text: string): boolean {
  if (PREFIXES.some((p) => text.startsWith(p))) return true;
  return FROM_PREFIX_CONSTANT.test(text);
}

/** The literals of a file that look like subjects, with their lines (a template's placeholders as `${name}` or `${…}`). */
function subjectLiterals(fileName: string, source: string): Array<{ line: number; text: string }> {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: Array<{ line: number; text: string }> = [];
  const visit = (node: ts.Node) => {
    let text: string | undefined;
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) text = node.text;
    else if (ts.isTemplateExpression(node))
      text =
        node.head.text +
        node.templateSpans
          .map((s) => `\${${ts.isIdentifier(s.expression) ? s.expression.text : '…'}}${s.literal.text}`)
          .join('');
    if (text !== undefined && looksLikeSubject(text)) {
      found.push({ line: file.getLineAndCharacterOfPosition(node.getStart(file)).line + 1, text });
    }
    // The parts of a template are looked at as one literal, above.
    if (!ts.isTemplateExpression(node)) ts.forEachChild(node, visit);
    else for (const span of node.templateSpans) visit(span.expression);
  };
  visit(file);
  return found;
}

function main(): void {
  let files = 0;
  const hits: string[] = [];
  for (const top of ['services', 'libs']) {
    for (const path of tsFiles(join(root, top))) {
      files++;
      for (const hit of subjectLiterals(path, readFileSync(path, 'utf8')))
        hits.push(`${relative(root, path)}:${hit.line}: ${JSON.stringify(hit.text)}`);
    }
  }
  if (hits.length > 0) {
    console.error(
      `${hits.length} NATS subject string(s) outside libs/contracts (declare them there and import the declaration):`,
    );
    for (const h of hits) console.error(`  ${h}`);
    process.exit(1);
  }
  console.log(`no NATS subject strings outside libs/contracts (${files} files of services/ and libs/)`);
}

main();
