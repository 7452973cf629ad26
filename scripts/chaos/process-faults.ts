// The faults done to processes: a SIGKILL (started again at once), a rolling restart, and the gateways behind a
// readiness-checking balancer restarted in turn.
import type { ServiceName } from '@platform/contracts';
import type { Stack } from '@platform/testkit';
import { get } from './load';
import { sleep } from './run';

/** A fault that is over when `act` is: stop something, wait, start it again. */
export const faultOf = (act: () => Promise<void> | void) => async (end: () => void) => {
  await act();
  end();
};

export const killAndRestart = (stack: Stack, name: ServiceName) => async (end: () => void) => {
  const proc = stack.processes.find((p) => p.name === name);
  if (!proc) throw new Error(`no ${name} process in the stack`);
  await stack.kill(proc, 'SIGKILL');
  end();
  await stack.startProcess(name);
};

/** A rolling restart, as a Deployment does it: for each replica in turn, a new one is started (and ready) before the old one gets SIGTERM. */
export const rollingRestart = (stack: Stack, name: ServiceName) => async (end: () => void) => {
  for (const old of stack.processes.filter((p) => p.name === name)) {
    await stack.startProcess(name);
    await stack.kill(old, 'SIGTERM');
  }
  end();
};

/**
 * A local load balancer in the client: requests go round robin to the gateways whose /readyz answered 200 at the last
 * check (every 100 ms), as a Kubernetes Service routes to ready endpoints only.
 */
export function gatewayPool(stack: Stack) {
  const ready = new Map<string, boolean>();
  let turn = 0;
  let stopped = false;
  const gateways = () => stack.processes.filter((p) => p.name === 'gateway' && p.url).map((p) => p.url!);
  const checks = (async () => {
    while (!stopped) {
      const now = gateways();
      for (const g of [...ready.keys()]) if (!now.includes(g)) ready.delete(g);
      await Promise.all(now.map(async (g) => ready.set(g, (await get(`${g}/readyz`, '')) === 200)));
      await sleep(100);
    }
  })();
  return {
    pick(): string {
      const live = [...ready].filter(([, ok]) => ok).map(([g]) => g);
      return live[turn++ % Math.max(1, live.length)] ?? stack.gatewayUrl;
    },
    isReady: (url: string) => ready.get(url) === true,
    async close() {
      stopped = true;
      await checks;
    },
  };
}

/** Rolling restart of the gateways behind the pool: a new one starts and is seen ready before the old one gets SIGTERM. */
export const rollingGateways = (stack: Stack, pool: ReturnType<typeof gatewayPool>) => async (end: () => void) => {
  for (const old of stack.processes.filter((p) => p.name === 'gateway')) {
    const fresh = await stack.startProcess('gateway');
    while (!pool.isReady(fresh.url!)) await sleep(50);
    await stack.kill(old, 'SIGTERM');
  }
  end();
};
