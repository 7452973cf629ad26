import { runMain } from '@platform/runtime';
import { management } from './service';

runMain(management);
