import { defineService } from '@platform/runtime';
import { credentialGatewayConfig } from './config';

/** Starts, registers on NATS and answers health; its operations arrive with their own issue. */
export const credentialGateway = defineService({
  name: 'credential-gateway',
  config: credentialGatewayConfig,
  uses: {},
  async start() {
    return { async stop() {} };
  },
});
