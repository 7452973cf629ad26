import type { EvaluationResult, EvaluationRun, PendingEvent, ProjectScope } from '@platform/contracts';
import { iso, isDuplicateKey, scoped, scopedId, type Connection, listPage } from '@platform/mongo';
import type { Outbox } from '@platform/outbox';
import { evaluationRunModel, evaluationRunStartModel, type EvaluationRunDoc } from './evaluation-run.model';
import { evaluationResultModel, type EvaluationResultDoc } from './evaluation-result.model';

export const resultKey = (scope: ProjectScope, runId: string, conversationId: string, evaluatorId: string) =>
  `${scope.tenantId}:${scope.projectId}:${runId}:${conversationId}:${evaluatorId}`;

export function toResult(d: EvaluationResultDoc): EvaluationResult {
  return {
    id: d.id,
    evaluationRunId: d.evaluationRunId,
    conversationId: d.conversationId,
    evaluatorId: d.evaluatorId,
    status: d.status,
    verdict: d.verdict ?? null,
    output: d.output == null ? null : JSON.parse(d.output),
    failedConditions: JSON.parse(d.failedConditions ?? '[]'),
    error: d.error ?? null,
    createdAt: iso(d.createdAt)!,
  };
}

export type EvaluationRepo = ReturnType<typeof evaluationRepo>;

export function evaluationRepo(db: Connection, outbox: Outbox) {
  const Runs = evaluationRunModel(db);
  const Starts = evaluationRunStartModel(db);
  const Results = evaluationResultModel(db);
  const runWriter = outbox.of(Runs);
  const resultWriter = outbox.of(Results);
  const hidden = runWriter.hidden;

  /** Progress of a run, read from its results (the run document itself never changes). */
  async function progress(run: EvaluationRunDoc): Promise<EvaluationRun> {
    const q = { ...scoped(run), evaluationRunId: run.id };
    const [groups, start, last] = await Promise.all([
      Results.aggregate<{ _id: { status: string; verdict: string | null }; n: number }>([
        { $match: q },
        { $group: { _id: { status: '$status', verdict: '$verdict' }, n: { $sum: 1 } } },
      ]),
      Starts.findById(scopedId(run, run.id)).lean(),
      Results.findOne(q, { createdAt: 1 }).sort({ createdAt: -1 }).lean<{ createdAt: Date }>(),
    ]);
    let completed = 0;
    let passed = 0;
    let failed = 0;
    let errors = 0;
    for (const g of groups) {
      completed += g.n;
      if (g._id.status === 'error') errors += g.n;
      else if (g._id.verdict === 'failed') failed += g.n;
      else if (g._id.verdict === 'passed') passed += g.n;
    }
    const done = completed >= run.totalItems;
    const status = done ? (errors > 0 ? 'failed' : 'completed') : start || completed > 0 ? 'running' : 'queued';
    return {
      id: run.id,
      status,
      conversationIds: run.conversationIds,
      evaluatorIds: run.evaluatorIds,
      totalItems: run.totalItems,
      completedItems: completed,
      passedItems: passed,
      failedItems: failed,
      errorItems: errors,
      createdAt: iso(run.createdAt)!,
      startedAt: iso(start?.startedAt ?? (completed > 0 ? last?.createdAt : undefined)) ?? null,
      completedAt: done ? (iso(last?.createdAt) ?? null) : null,
    };
  }

  return {
    /**
     * Erasure of a conversation: its results go, and it leaves the runs that listed it (their item count shrinks with
     * it, so their progress still adds up); a result's `evaluation.failed` still waiting in the outbox goes with it.
     */
    async eraseConversation(scope: ProjectScope, conversationId: string): Promise<void> {
      await Results.deleteMany({ ...scoped(scope), conversationId });
      const listing = await Runs.find(
        { ...scoped(scope), conversationIds: conversationId },
        { _id: 1, evaluatorIds: 1 },
      ).lean<Array<{ _id: string; evaluatorIds: string[] }>>();
      for (const run of listing) {
        await Runs.updateOne(
          { _id: run._id, conversationIds: conversationId },
          { $pull: { conversationIds: conversationId }, $inc: { totalItems: -run.evaluatorIds.length } },
        );
      }
    },
    runModel: Runs,
    resultModel: Results,
    /** The run, its work items published to the work queue once it is stored (the outbox). */
    async insertRun(doc: Omit<EvaluationRunDoc, '_id'>, work: PendingEvent[]): Promise<void> {
      const _id = scopedId(doc, doc.id);
      if ((await runWriter.insert({ _id, ...doc }, work)) === 'duplicate')
        throw new Error(`evaluation run ${_id} exists already`);
    },
    async findRun(scope: ProjectScope, id: string): Promise<EvaluationRun | null> {
      const d = await Runs.findOne({ _id: scopedId(scope, id), ...scoped(scope) }, hidden).lean();
      return d ? progress(d) : null;
    },
    async runExists(scope: ProjectScope, id: string): Promise<boolean> {
      return (await Runs.exists({ _id: scopedId(scope, id), ...scoped(scope) })) !== null;
    },
    async listRuns(scope: ProjectScope, page: number, limit: number) {
      const q = scoped(scope);
      const { rows, total } = await listPage(
        Runs,
        { filter: q, sort: { createdAt: -1, _id: 1 }, projection: hidden },
        page,
        limit,
      );
      return { rows: await Promise.all(rows.map(progress)), total };
    },
    async markStarted(scope: ProjectScope, runId: string): Promise<void> {
      try {
        await Starts.collection.insertOne({ _id: scopedId(scope, runId), startedAt: new Date() } as never);
      } catch (err) {
        if (!isDuplicateKey(err)) throw err;
      }
    },
    async resultExists(
      scope: ProjectScope,
      runId: string,
      conversationId: string,
      evaluatorId: string,
    ): Promise<boolean> {
      return (await Results.exists({ _id: resultKey(scope, runId, conversationId, evaluatorId) })) !== null;
    },
    /** Stores a result once; false when this item already had one (a redelivery). */
    async insertResult(doc: Omit<EvaluationResultDoc, '_id'>, events: PendingEvent[]): Promise<boolean> {
      const _id = resultKey(doc, doc.evaluationRunId, doc.conversationId, doc.evaluatorId);
      return (await resultWriter.insert({ _id, ...doc }, events)) === 'inserted';
    },
    async listResults(scope: ProjectScope, runId: string, page: number, limit: number) {
      const q = { ...scoped(scope), evaluationRunId: runId };
      const [rows, total] = await Promise.all([
        Results.find(q, hidden)
          .sort({ createdAt: 1, _id: 1 })
          .skip((page - 1) * limit)
          .limit(limit)
          .lean(),
        Results.countDocuments(q),
      ]);
      return { rows: rows.map(toResult), total };
    },
  };
}
