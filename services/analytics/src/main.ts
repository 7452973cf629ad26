import { runMain } from '@platform/runtime';
import { analytics } from './service';

runMain(analytics);
