import type { Deps } from '@platform/runtime';
import { consumeDurable, ensureStream, type RunningConsumer } from '@platform/bus';
import { EVAL_WORK_STREAM, EVAL_WORK_SUBJECT_PREFIX, EvalWorkItem } from '@platform/contracts';
import { z } from 'zod';
import { evaluateItem, type EvaluationDeps } from '../domain/evaluations';

/**
 * The evaluation work queue: a work-queue stream (each item is removed once acknowledged) read by one durable
 * consumer shared by every evals replica. An item is acknowledged only after its result is stored; an item whose
 * worker died is handed out again after the ack wait, and its stored result (keyed by the item) makes that a no-op.
 */
export async function startEvaluationWorker(nc: Deps<unknown>['nc'], deps: EvaluationDeps, opts: { concurrency: number; ackWaitMs: number }): Promise<RunningConsumer> {
  await ensureStream(await nc.jetstreamManager(), { name: EVAL_WORK_STREAM, subjects: [`${EVAL_WORK_SUBJECT_PREFIX}.>`], retention: 'workqueue', duplicateWindowMs: 10 * 60 * 1000 });
  return consumeDurable(nc, {
    stream: EVAL_WORK_STREAM,
    durable: 'evals-work',
    filterSubjects: [`${EVAL_WORK_SUBJECT_PREFIX}.>`],
    ackWaitMs: opts.ackWaitMs,
    concurrency: opts.concurrency,
    nakDelayMs: 2_000,
    parse: z.object({ data: EvalWorkItem }).transform((e) => e.data),
    handler: (item) => evaluateItem(deps, item),
  });
}
