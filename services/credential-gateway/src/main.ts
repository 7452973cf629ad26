import { runMain } from '@platform/runtime';
import { credentialGateway } from './service';

runMain(credentialGateway);
