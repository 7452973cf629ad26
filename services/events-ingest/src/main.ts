import { runMain } from '@platform/runtime';
import { eventsIngest } from './service';

runMain(eventsIngest);
