import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { topFrames } from '../../scripts/bench/profile';

/**
 * A bundle of two lines whose source map says: line 1 comes from zod (through pnpm's store), line 2 from a file of
 * ours ten lines down. VLQ `AAAA` = column 0 of source 0, line 0; `ACUA` = source +1, line +10.
 */
function bundle(dir: string): string {
  const file = join(dir, 'services', 'gateway', 'dist', 'main.js');
  mkdirSync(join(dir, 'services', 'gateway', 'dist'), { recursive: true });
  writeFileSync(file, 'function a(){}\nfunction b(){}\n');
  writeFileSync(
    `${file}.map`,
    JSON.stringify({
      version: 3,
      sources: [
        '../../../node_modules/.pnpm/zod@4.1.0/node_modules/zod/v4/core/schemas.js',
        '../src/routes/mount-operations.ts',
      ],
      names: [],
      mappings: 'AAAA;ACUA',
    }),
  );
  return pathToFileURL(file).href;
}

test('when a profile of a bundled service is summarised, then its frames are named by their original sources and grouped by package', () => {
  const dir = mkdtempSync(join(tmpdir(), 'bench-profile-'));
  try {
    const url = bundle(dir);
    const frame = (id: number, functionName: string, lineNumber: number, fileUrl = url) => ({
      id,
      callFrame: { functionName, url: fileUrl, lineNumber, columnNumber: 0 },
    });
    const profile = {
      nodes: [
        { ...frame(1, '(root)', -1, ''), children: [2, 3, 4, 5] },
        frame(2, 'parse', 0),
        frame(3, 'handler', 1),
        frame(4, '(idle)', -1, ''),
        frame(5, 'setHeader', 639, 'node:_http_outgoing'),
      ],
      // 3 samples in zod, 1 in our handler, 4 idle, 1 in node: busy is 5 of 9.
      samples: [2, 2, 2, 3, 4, 4, 4, 4, 5],
    };
    const file = join(dir, 'CPU.test.cpuprofile');
    writeFileSync(file, JSON.stringify(profile));

    const lines = topFrames(file, 5).split('\n');
    expect(lines[0]).toMatch(/^gateway: busy 56% of 9 samples/);
    expect(lines).toContain(' 60.0%  parse  zod/v4/core/schemas.js:1');
    expect(lines).toContain(' 20.0%  handler  services/gateway/src/routes/mount-operations.ts:11');
    expect(lines).toContain(' 20.0%  setHeader  node:_http_outgoing:640');
    const bySource = lines.slice(lines.indexOf('self time by source:') + 1);
    expect(bySource).toEqual([
      ' 60.0%  zod',
      ' 20.0%  services/gateway/src/routes/mount-operations.ts',
      ' 20.0%  node:_http_outgoing',
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
