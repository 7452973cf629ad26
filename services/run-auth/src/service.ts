import { defineService } from '@platform/runtime';
import { runAuthConfig } from './config';
import { registerAuthenticateHandler } from './handlers/authenticate';

export const runAuth = defineService({
  name: 'run-auth',
  config: runAuthConfig,
  uses: {},
  async start({ bus }) {
    registerAuthenticateHandler(bus, { bus });
    return { async stop() {} };
  },
});
