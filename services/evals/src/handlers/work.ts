import type { Deps } from '@platform/runtime';
import { consumeDurable, ensureStream, streamSpec, type RunningConsumer } from '@platform/bus';
import {
  EvalWorkItem,
  evalWorkDurable,
  evalWorkStreamDef,
  IMPROVEMENT_TURN_WORK_TYPE,
  ImprovementTurnWork,
} from '@platform/contracts';
import { z } from 'zod';
import { evaluateItem, type EvaluationDeps } from '../domain/evaluations';
import { answerTurn, type ImprovementDeps } from '../domain/improvements';

/** A message of the work queue: an evaluation item, or a message of an improvement branch for the assistant. */
const Work = z.union([
  z
    .object({ type: z.literal(IMPROVEMENT_TURN_WORK_TYPE), data: ImprovementTurnWork })
    .transform((e) => ({ kind: 'turn' as const, turn: e.data })),
  z.object({ data: EvalWorkItem }).transform((e) => ({ kind: 'item' as const, item: e.data })),
]);

/**
 * The evals work queue: a work-queue stream (each message is removed once acknowledged) read by one durable consumer
 * shared by every evals replica. It carries evaluation items and improvement assistant turns. A message is
 * acknowledged only after its result is stored; a message whose worker died is handed out again after the ack wait,
 * and its stored result (keyed by the item or the turn, inserted once) makes that a no-op.
 */
export async function startEvaluationWorker(
  nc: Deps<unknown>['nc'],
  deps: { evaluations: EvaluationDeps; improvements: ImprovementDeps },
  opts: { concurrency: number; ackWaitMs: number },
): Promise<RunningConsumer> {
  await ensureStream(await nc.jetstreamManager(), streamSpec(evalWorkStreamDef));
  return consumeDurable(nc, {
    stream: evalWorkDurable.stream,
    durable: evalWorkDurable.durable,
    filterSubjects: [...evalWorkStreamDef.subjects],
    ackWaitMs: opts.ackWaitMs,
    concurrency: opts.concurrency,
    nakDelayMs: 2_000,
    // A message that does not parse can never be worked: drop it (logged) instead of redelivering it forever.
    terminateInvalid: true,
    parse: Work,
    handler: (work) =>
      work.kind === 'turn' ? answerTurn(deps.improvements, work.turn) : evaluateItem(deps.evaluations, work.item),
  });
}
