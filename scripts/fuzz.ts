/**
 * pnpm fuzz: schemathesis against the served OpenAPI document, as the platform admin, over every operation.
 *
 *   pnpm fuzz                          uses the npm start stack when it runs (.local/admin-token), else starts one
 *   pnpm fuzz --url URL --token TOKEN  fuzzes that gateway
 *   --max-examples N (default 25)  --max-time SECONDS (default 900)  --seed N
 *   --include-path-regex RE / --exclude-path-regex RE  only / not the operations whose path matches
 *
 * schemathesis is installed from PyPI into .infra/venv-fuzz (git-ignored) when missing. Checks: no 5xx, every status
 * documented, every body and content type as documented. The summary is written to .infra/fuzz-last.txt.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot, startChatappFake, startPrivateStack } from '@platform/testkit';
import { randomSecret } from '@platform/secrets';

const venv = join(repoRoot, '.infra', 'venv-fuzz');
const st = join(venv, 'bin', 'schemathesis');

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

function ensureSchemathesis(): void {
  if (existsSync(st)) return;
  console.log('[fuzz] installing schemathesis into .infra/venv-fuzz');
  mkdirSync(join(repoRoot, '.infra'), { recursive: true });
  execFileSync('python3', ['-m', 'venv', venv], { stdio: 'inherit' });
  execFileSync(join(venv, 'bin', 'pip'), ['install', '-q', 'schemathesis'], { stdio: 'inherit' });
}

async function alive(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/readyz`)).ok;
  } catch {
    return false;
  }
}

/** The gateway to fuzz: given, the npm start stack, or a stack of our own (stopped afterwards). */
async function target(): Promise<{ url: string; token: string; stop(): Promise<void> }> {
  const url = arg('url') ?? process.env.FUZZ_URL;
  const token = arg('token') ?? process.env.FUZZ_TOKEN;
  if (url && token) return { url, token, stop: async () => undefined };
  const devUrl = `http://127.0.0.1:${process.env.GATEWAY_PORT ?? 3000}`;
  const tokenFile = join(repoRoot, '.local', 'admin-token');
  if (existsSync(tokenFile) && (await alive(devUrl))) {
    console.log(`[fuzz] using the running stack at ${devUrl}`);
    return { url: devUrl, token: readFileSync(tokenFile, 'utf8').trim(), stop: async () => undefined };
  }
  console.log('[fuzz] starting a stack of its own');
  execFileSync(process.execPath, [join(repoRoot, 'scripts', 'build-service.mjs')], { stdio: 'inherit' });
  const chatapp = await startChatappFake();
  try {
    // Its own NATS and databases (dropped when it stops, with everything the fuzzer wrote).
    const stack = await startPrivateStack({
      name: 'fuzz',
      logDir: join(repoRoot, '.infra', 'fuzz-logs', Date.now().toString(36)),
      env: {
        ANALYTICS_PORT: '0',
        RATE_LIMIT_ENABLED: 'false',
        CHATAPP_API_URL: chatapp.apiUrl,
        CHATAPP_AUTHORIZE_URL: chatapp.authorizeUrl,
        CHATAPP_CLIENT_ID: chatapp.clientId,
        CHATAPP_CLIENT_SECRET: chatapp.clientSecret,
        CHATAPP_STATE_SECRET: randomSecret(32),
        CHATAPP_RESULT_URL: 'http://127.0.0.1/chatapp-result',
        CHATAPP_LINK_URL: 'http://127.0.0.1/chatapp-link',
      },
    });
    stack.onStop(() => chatapp.close());
    return { url: stack.gatewayUrl, token: stack.adminToken, stop: stack.stop };
  } catch (err) {
    await chatapp.close();
    throw err;
  }
}

async function main(): Promise<number> {
  ensureSchemathesis();
  const t = await target();
  const maxExamples = arg('max-examples') ?? '25';
  const maxTime = arg('max-time') ?? '900';
  const reportDir = join(repoRoot, '.infra', 'fuzz-report');
  const args = [
    'run',
    `${t.url}/openapi.json`,
    '--url',
    t.url,
    '-H',
    `Authorization: Bearer ${t.token}`,
    '--checks',
    'not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance',
    '--max-examples',
    maxExamples,
    '--max-time',
    maxTime,
    '--phases',
    arg('phases') ?? 'examples,coverage,fuzzing,stateful',
    // The analytics ingest operations live on their own listener ({analytics_url}); the bad-input corpus and
    // test/analytics/ingest.test.ts cover them.
    '--exclude-path',
    '/events',
    '--exclude-path',
    '/events/batch',
    '--suppress-health-check',
    'all',
    '--request-timeout',
    '20',
    '--workers',
    arg('workers') ?? '2',
    '--report',
    'junit',
    '--report-dir',
    reportDir,
    '--output-truncate',
    'true',
    '--warnings',
    'off',
    ...(arg('seed') ? ['--seed', arg('seed')!] : []),
    ...(arg('exclude-path-regex') ? ['--exclude-path-regex', arg('exclude-path-regex')!] : []),
    ...(arg('include-path-regex') ? ['--include-path-regex', arg('include-path-regex')!] : []),
  ];
  console.log(
    `[fuzz] schemathesis against ${t.url}/openapi.json (max ${maxExamples} examples per operation, ${maxTime} s)`,
  );
  let output = '';
  const code = await new Promise<number>((resolve) => {
    const child = spawn(st, args, {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1', SCHEMATHESIS_HOOKS: '' },
    });
    child.stdout.on('data', (d: Buffer) => {
      output += d.toString();
      process.stdout.write(d);
    });
    child.stderr.on('data', (d: Buffer) => process.stderr.write(d));
    child.on('exit', (c) => resolve(c ?? 1));
  });
  await t.stop();
  const summary = output
    .split('\n')
    .filter((l) => /passed|failed|error|skipped|operations|Test cases|Seed/i.test(l))
    .slice(-12)
    .join('\n');
  writeFileSync(join(repoRoot, '.infra', 'fuzz-last.txt'), `${new Date().toISOString()} exit ${code}\n${summary}\n`);
  return code;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
