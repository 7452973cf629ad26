import { runMain } from '@platform/runtime';
import { webhookDispatcher } from './service';

runMain(webhookDispatcher);
