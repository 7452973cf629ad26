import { loadConfig } from '@platform/config';
import { getLogger } from '@platform/logger';
import { compactMemoryWhenIdle } from '@platform/telemetry';
import { gatewayConfig } from './config';
import { startGateway } from './app';

const log = getLogger('gateway.main');

startGateway(loadConfig(gatewayConfig))
  .then((gw) => {
    // started: the garbage of start-up goes, and the young generation shrinks whenever the process is idle
    compactMemoryWhenIdle();
    const onSignal = (signal: string) => {
      log.info({ signal }, 'signal received; draining');
      setTimeout(() => {
        log.error('shutdown took longer than the grace period; exiting');
        process.exit(1);
      }, gw.graceMs).unref();
      gw.stop().then(() => process.exit(0), () => process.exit(1));
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  })
  .catch((err) => {
    // biome-ignore lint/suspicious/noConsole: the logger may not be set up when start fails; this one line goes to stderr
    console.error('gateway failed to start:', err instanceof Error ? err.message : err);
    process.exit(1);
  });
