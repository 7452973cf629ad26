// This run's identity: its id, where it writes, and the names that keep its data apart from every other run's.
import { join } from 'node:path';
import { repoRoot } from '@platform/testkit';

export const runId = Date.now().toString(36);
export const outDir = join(repoRoot, '.bench');
export const runsDir = join(outDir, 'runs');
export const logDir = join(outDir, 'logs', runId);
export const profDir = join(outDir, 'profiles', runId);
export const dbPrefix = `bench_${runId}`;
/** The database prefix and webhook partition of the stack named `name` ('' for the stack of most rows). */
export const dbPrefixOf = (name: string) => (name ? `${dbPrefix}_${name}` : dbPrefix);
export const partitionOf = (name: string) => (name ? `bench-${runId}-${name}` : `bench-${runId}`);
export const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);
