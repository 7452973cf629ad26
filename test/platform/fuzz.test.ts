import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, testStack } from '@platform/testkit';

/**
 * The bounded fuzz run of npm test: `pnpm fuzz` (schemathesis, installed into .infra/venv-fuzz when missing) against
 * the test stack's GET /openapi.json as the platform admin, a few examples per operation and a time budget. It
 * fails on any 5xx, undocumented status, or body/content type that breaks the documented schema.
 */
test('when schemathesis fuzzes every operation of the served OpenAPI document, then it finds no server error, undocumented status or schema violation', async () => {
  const stack = testStack();
  let output = '';
  const code = await new Promise<number>((resolve) => {
    const child = spawn(
      process.execPath,
      [
        join(repoRoot, 'node_modules', 'tsx', 'dist', 'cli.mjs'),
        join(repoRoot, 'scripts', 'fuzz.ts'),
        '--url',
        stack.gatewayUrl,
        '--token',
        stack.adminToken,
        '--max-examples',
        '3',
        '--max-time',
        '240',
        '--phases',
        'coverage,fuzzing',
        '--workers',
        '1',
        // The shared test database keeps chat workspaces of earlier runs, sealed under their own ENCRYPTION_KEY: this
        // run reads their bot tokens as revoked (502 from the chat calls). `pnpm fuzz` on its own stack covers them.
        '--exclude-path-regex',
        '^/work-apps/chatapp/workspaces/\\{teamId\\}',
      ],
      { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('exit', (c) => resolve(c ?? 1));
  });
  const failures = failuresOf(output);
  // What the stack logged about its server errors meanwhile (the gateway logs every 5xx with its operation).
  if (code !== 0 && stack.logDir) failures.push(...serverErrorsLogged(stack.logDir));
  expect({ code, failures }).toEqual({ code: 0, failures: [] });
}, 600_000);

/**
 * What schemathesis printed about its failures: the whole FAILURES and ERRORS sections (operation, case, response and
 * the curl line that reproduces it; a section header is centred in '_' only when the operation fits the line), else
 * the summary lines that name a check.
 */
function failuresOf(output: string): string[] {
  const lines = output.split('\n');
  const sections: string[] = [];
  let inside = false;
  for (const line of lines) {
    if (/=+ (FAILURES|ERRORS) =+/.test(line)) inside = true;
    else if (/^=+ \S.* =+$/.test(line)) inside = false;
    if (inside) sections.push(line);
  }
  if (sections.length > 0) return sections;
  return lines.filter((l) => /ST\d{3}|Server error|Undocumented|schema violation|Runtime Error/.test(l));
}

/** Log lines at warn or above that speak of a server error or an unexpected failure, from every process of the stack. */
function serverErrorsLogged(logDir: string): string[] {
  const lines: string[] = [];
  for (const file of readdirSync(logDir).filter((f) => f.endsWith('.log'))) {
    for (const line of readFileSync(join(logDir, file), 'utf8').split('\n')) {
      if (/"level":50|server error|unexpected error|unhandled error/.test(line))
        lines.push(`${file}: ${line.slice(0, 1500)}`);
    }
  }
  return lines.slice(-40);
}
