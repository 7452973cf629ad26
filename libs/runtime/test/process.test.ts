import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const fixture = join(__dirname, 'fixtures', 'slow-boot.ts');

interface Child {
  proc: ChildProcessWithoutNullStreams;
  /** Resolves when the child has printed `line` on stdout. */
  printed(line: string): Promise<void>;
  lines: string[];
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function start(env: Record<string, string> = {}): Child {
  // node itself with tsx's loader (the tsx command is a parent process of its own that relays signals)
  const proc = spawn(process.execPath, ['--import', 'tsx', fixture], {
    env: { ...process.env, LOG_LEVEL: 'silent', ...env },
    stdio: 'pipe',
  });
  const lines: string[] = [];
  const waiters: Array<() => void> = [];
  createInterface({ input: proc.stdout }).on('line', (line) => {
    lines.push(line);
    for (const w of waiters.splice(0)) w();
  });
  const printed = (line: string) =>
    new Promise<void>((resolve) => {
      const check = () => (lines.includes(line) ? resolve() : waiters.push(check));
      check();
    });
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { proc, printed, lines, exit };
}

describe('runProcess: signals', () => {
  it("a SIGTERM while the process starts stops it cleanly once started (it used to be dropped by a container's PID 1)", async () => {
    const child = start();
    await child.printed('booting');
    child.proc.kill('SIGTERM');
    child.proc.stdin.write('go\n');
    expect(await child.exit).toEqual({ code: 0, signal: null });
    expect(child.lines).toEqual(['booting', 'booted', 'stopped']);
  });

  it('a SIGTERM after start stops the process and it exits 0', async () => {
    const child = start();
    await child.printed('booting');
    child.proc.stdin.write('go\n');
    await child.printed('booted');
    child.proc.kill('SIGTERM');
    expect(await child.exit).toEqual({ code: 0, signal: null });
    expect(child.lines).toEqual(['booting', 'booted', 'stopped']);
  });

  it('a stop that outlasts the grace period exits 1; so does a second signal at once', async () => {
    const slow = start({ SLOW_STOP: '1', SHUTDOWN_GRACE_MS: '300' });
    await slow.printed('booting');
    slow.proc.stdin.write('go\n');
    await slow.printed('booted');
    slow.proc.kill('SIGTERM');
    expect(await slow.exit).toEqual({ code: 1, signal: null });
    expect(slow.lines).not.toContain('stopped');

    const twice = start({ SLOW_STOP: '1' });
    await twice.printed('booting');
    twice.proc.stdin.write('go\n');
    await twice.printed('booted');
    twice.proc.kill('SIGTERM');
    twice.proc.kill('SIGINT');
    expect(await twice.exit).toEqual({ code: 1, signal: null });
  });

  it('a boot that fails exits 1 and says why on stderr', async () => {
    const child = start();
    let stderr = '';
    child.proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    await child.printed('booting');
    child.proc.stdin.write('fail\n');
    expect(await child.exit).toEqual({ code: 1, signal: null });
    expect(stderr).toContain('slow-boot failed to start: could not start');
  });

  it('a boot function that throws at once (a configuration error) exits 1 the same way', async () => {
    const child = start({ THROW_AT_START: '1' });
    let stderr = '';
    child.proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    expect(await child.exit).toEqual({ code: 1, signal: null });
    expect(stderr).toContain('slow-boot failed to start: bad configuration');
  });
});
