import { defineService } from '@platform/runtime';
import { evalsConfig } from './config';

/** Starts, registers on NATS and answers health; its operations arrive with their own issue. */
export const evals = defineService({
  name: 'evals',
  config: evalsConfig,
  uses: {},
  async start() {
    return { async stop() {} };
  },
});
