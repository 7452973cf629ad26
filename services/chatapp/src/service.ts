import { defineService } from '@platform/runtime';
import { chatappConfig } from './config';

/** Starts, registers on NATS and answers health; its operations arrive with their own issue. */
export const chatapp = defineService({
  name: 'chatapp',
  config: chatappConfig,
  uses: {},
  async start() {
    return { async stop() {} };
  },
});
