import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from '@platform/testkit';

export default async function globalTeardown(): Promise<void> {
  // The processes, the chat product fake, the run's NATS and its databases (TEST_KEEP_DB=1 keeps them for a look).
  await globalThis.__STACK__?.stop();
  await globalThis.__CONTAINERS__?.stop();
  // In CI nothing should outlive the run; locally the servers stay up for the next one.
  if (process.env.CI) execFileSync('bash', [join(repoRoot, 'scripts', 'infra.sh'), 'down'], { stdio: 'inherit' });
}
