import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { removeNatsStore, repoRoot } from '@platform/testkit';

export default async function globalTeardown(): Promise<void> {
  await globalThis.__STACK__?.stop();
  await globalThis.__CHATAPP_FAKE__?.close();
  if (globalThis.__NATS__) {
    await globalThis.__NATS__.stop();
    removeNatsStore(globalThis.__NATS__);
  }
  // In CI nothing should outlive the run; locally the servers stay up for the next one.
  if (process.env.CI) execFileSync('bash', [join(repoRoot, 'scripts', 'infra.sh'), 'down'], { stdio: 'inherit' });
}
