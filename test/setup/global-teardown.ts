import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { dropDatabases, removeNatsStore, repoRoot } from '@platform/testkit';

export default async function globalTeardown(): Promise<void> {
  const stack = globalThis.__STACK__;
  await stack?.stop();
  // The run's databases go with it (TEST_KEEP_DB=1 keeps them for a look afterwards).
  if (stack && !process.env.TEST_KEEP_DB) await dropDatabases(stack.env.MONGO_URL!, stack.env.MONGO_DB_PREFIX!).catch((err) => console.warn(`dropping test databases failed: ${err}`));
  await globalThis.__CHATAPP_FAKE__?.close();
  if (globalThis.__NATS__) {
    await globalThis.__NATS__.stop();
    removeNatsStore(globalThis.__NATS__);
  }
  await globalThis.__CONTAINERS__?.stop();
  // In CI nothing should outlive the run; locally the servers stay up for the next one.
  if (process.env.CI) execFileSync('bash', [join(repoRoot, 'scripts', 'infra.sh'), 'down'], { stdio: 'inherit' });
}
