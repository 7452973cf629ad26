import { defineService } from '@platform/runtime';
import { analyticsConfig } from './config';

/** Starts, registers on NATS and answers health; its operations arrive with their own issue. */
export const analytics = defineService({
  name: 'analytics',
  config: analyticsConfig,
  uses: {},
  async start() {
    return { async stop() {} };
  },
});
