import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  adminApi,
  aProject,
  eventually,
  natsAuthDir,
  repoRoot,
  testStack,
  trackChild,
  adminClient,
  anAgentNamed,
} from '@platform/testkit';

/** examples/event-printer, started with the README's one-line command, against the test stack's NATS. */
const stack = testStack();
const api = adminApi(stack);
let child: ChildProcess | undefined;

afterEach(async () => {
  if (!child?.pid || child.exitCode !== null) return;
  const exited = new Promise((r) => child!.once('exit', r));
  process.kill(-child.pid, 'SIGTERM');
  await exited;
});

function start(args: string[]) {
  // `pnpm example:events -- …` as in the README; its own process group so the whole tree stops together.
  const proc = spawn('pnpm', ['--silent', 'example:events', '--', ...args], {
    cwd: repoRoot,
    env: { ...process.env, NATS_URL: stack.env.NATS_URL },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  trackChild(proc);
  const out = { stdout: '', stderr: '' };
  proc.stdout!.on('data', (c: Buffer) => (out.stdout += c.toString()));
  proc.stderr!.on('data', (c: Buffer) => (out.stderr += c.toString()));
  return {
    proc,
    out,
    lines: () =>
      out.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, any>),
  };
}

/** A project consumer's credential, issued with the operators' command (`pnpm nats:credentials consumer`). */
function consumerCredential(p: { tenantId: string; projectId: string }): string {
  const out = join(mkdtempSync(join(tmpdir(), 'printer-')), 'consumer.creds');
  execFileSync(
    'pnpm',
    [
      '--silent',
      'nats:credentials',
      'consumer',
      '--dir',
      natsAuthDir(),
      '--tenant',
      p.tenantId,
      '--project',
      p.projectId,
      '--out',
      out,
    ],
    { cwd: repoRoot, stdio: 'ignore' },
  );
  return out;
}

describe('the event printer example', () => {
  test("when an event is posted through the API, then the printer started with that project's consumer credential prints it, and nothing of another project", async () => {
    const p = aProject();
    const other = { tenantId: p.tenantId, projectId: aProject().projectId };
    const printer = start(['--creds', consumerCredential(p)]);
    child = printer.proc;
    await eventually(
      () => printer.out.stderr.includes('listening'),
      `the printer to start (stderr: ${printer.out.stderr})`,
      30_000,
    );

    await anAgentNamed(adminClient(), p, 'agent-a');
    const key = (await api.createApiKey({ params: p, body: { agentId: 'agent-a', name: 'printer' } })).data.key;
    await anAgentNamed(adminClient(), other, 'agent-a');
    const otherKey = (await api.createApiKey({ params: other, body: { agentId: 'agent-a', name: 'printer' } })).data
      .key;
    await api.withToken(otherKey).createRunEvent({ body: { type: 'elsewhere.viewed' } });
    const posted = (
      await api.withToken(key).createRunEvent({ body: { type: 'checkout.completed', properties: { total: 42 } } })
    ).data;

    const line = await eventually(
      () => printer.lines().find((l) => l.event?.id === posted.id),
      'the printed event',
      20_000,
    );
    expect(line).toMatchObject({
      tenantId: p.tenantId,
      projectId: p.projectId,
      event: posted,
      dispatch: expect.any(Boolean),
    });
    expect(printer.lines().every((l) => l.projectId === p.projectId)).toBe(true);
  });
});
