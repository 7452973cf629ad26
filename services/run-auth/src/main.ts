import { runMain } from '@platform/runtime';
import { runAuth } from './service';

runMain(runAuth);
