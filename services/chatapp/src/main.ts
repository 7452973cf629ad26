import { runMain } from '@platform/runtime';
import { chatapp } from './service';

runMain(chatapp);
