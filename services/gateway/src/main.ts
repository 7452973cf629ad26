import { loadConfig } from '@platform/config';
import { runProcess } from '@platform/runtime';
import { gatewayConfig } from './config';
import { startGateway } from './app';

runProcess('gateway', () => startGateway(loadConfig(gatewayConfig)));
