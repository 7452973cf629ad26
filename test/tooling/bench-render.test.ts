import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '@platform/testkit';
import {
  readmeSection,
  readResults,
  renderDocs,
  replaceSection,
  RESULTS_PATH,
  staleDocs,
} from '../../scripts/bench/render';

/** A copy of the rendered files and the results they come from, to change without touching the checkout. */
function copyOfDocs(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bench-render-'));
  mkdirSync(join(dir, 'docs', 'bench'), { recursive: true });
  for (const path of ['README.md', join('docs', 'performance.md'), RESULTS_PATH])
    writeFileSync(join(dir, path), readFileSync(join(repoRoot, path)));
  return dir;
}

test('the committed README and performance page show what docs/bench/latest.json renders to', () => {
  expect(staleDocs(repoRoot)).toEqual([]);
});

test('when a figure in the README table is edited by hand, then the check names the README and rendering puts the figure back', () => {
  const dir = copyOfDocs();
  try {
    const readme = join(dir, 'README.md');
    const rendered = readFileSync(readme, 'utf8');
    const row = rendered.split('\n').find((l) => l.startsWith('| POST /run/v1/events (new, 201) |'))!;
    writeFileSync(readme, rendered.replace(row, row.replace(/\| [\d,]+ req\/s/, '| 9,999 req/s')));

    expect(staleDocs(dir)).toEqual(['README.md']);
    const [again] = renderDocs(readResults(join(dir, RESULTS_PATH)), dir).filter((d) => d.path === 'README.md');
    expect(again!.rendered).toBe(rendered);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('when a run missed a target, then its README row says NO and the sentence above the table names the row', () => {
  const results = readResults(join(repoRoot, RESULTS_PATH));
  const row = results.rows.find((r) => r.name === 'POST /run/v1/events (replayed, 200)')!;
  row.met = false;

  const section = readmeSection(results);

  expect(section).toContain('| POST /run/v1/events (replayed, 200) | ');
  expect(section.split('\n').find((l) => l.startsWith('| POST /run/v1/events (replayed, 200) |'))).toMatch(/\| NO \|$/);
  expect(section).toMatch(/of \d+ targets met \(missed: POST \/run\/v1\/events \(replayed, 200\)\)/);
});

test('when a file has no bench markers, then rendering fails and names the file', () => {
  expect(() => replaceSection('# A page without markers\n', 'table', 'docs/elsewhere.md')).toThrow(
    /docs\/elsewhere\.md has no <!-- bench:begin -->/,
  );
});
