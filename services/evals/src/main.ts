import { runMain } from '@platform/runtime';
import { evals } from './service';

runMain(evals);
