import type { PendingEvent, ProjectScope } from '@platform/contracts';
import { isDuplicateKey, scoped, scopedId, type Connection } from '@platform/mongo';
import type { Outbox } from '@platform/outbox';
import {
  improvementModels,
  type BaseAgentDoc,
  type BranchDoc,
  type MergeStepDoc,
  type TurnDoc,
} from './improvement.model';

export interface StoredDecision {
  _id: string;
  tenantId?: string | null;
  projectId?: string | null;
  branchName?: string | null;
  resultSeq?: number | null;
  agentIds: string[];
  at: Date;
  completedAt?: Date | null;
  decision: 'rejected' | 'merged';
}

export interface StoredTurnResult {
  _id: string;
  branchKey: string;
  seq: number;
  statusMessage?: string | null;
  assistantMessage?: string | null;
  edits: string;
  finishedAt: Date;
  status: 'failed' | 'completed' | 'not_configured';
}

export const branchKey = (scope: ProjectScope, branchName: string) => scopedId(scope, branchName);
const turnId = (key: string, seq: number) => `${key}#${String(seq).padStart(6, '0')}`;

export interface Turn extends TurnDoc {
  /** null while the assistant has not answered (the turn is running). */
  result: StoredTurnResult | null;
}

export interface BranchState {
  branch: BranchDoc;
  turns: Turn[];
  decision: StoredDecision | null;
  steps: MergeStepDoc[];
}

export type ImprovementRepo = ReturnType<typeof improvementRepo>;

async function insertOnce(
  model: { collection: { insertOne(doc: never): Promise<unknown> } },
  doc: Record<string, unknown>,
): Promise<boolean> {
  try {
    await model.collection.insertOne(doc as never);
    return true;
  } catch (err) {
    if (isDuplicateKey(err)) return false;
    throw err;
  }
}

export function improvementRepo(db: Connection, outbox: Outbox) {
  const { Branches, BaseAgents, Turns, TurnResults, Decisions, MergeSteps, CopilotRuns } = improvementModels(db);
  const turnWriter = outbox.of(Turns);
  const hidden = turnWriter.hidden;

  async function load(branch: BranchDoc): Promise<BranchState> {
    const [turns, results, decision, steps] = await Promise.all([
      Turns.find({ branchKey: branch._id }, hidden).sort({ seq: 1 }).lean(),
      TurnResults.find({ branchKey: branch._id }).sort({ seq: 1 }).lean(),
      Decisions.findById(branch._id).lean(),
      MergeSteps.find({ branchKey: branch._id }).lean(),
    ]);
    const bySeq = new Map(results.map((r) => [r.seq, r]));
    return {
      branch,
      turns: turns.map((t) => ({ ...t, result: bySeq.get(t.seq) ?? null })),
      decision: decision ?? null,
      steps,
    };
  }

  /** A turn, its work item queued once it is stored (the outbox). */
  async function insertTurnWithWork(
    key: string,
    seq: number,
    turn: Pick<TurnDoc, 'userMessage' | 'createdAt'>,
    work: PendingEvent[],
  ): Promise<boolean> {
    return (await turnWriter.insert({ _id: turnId(key, seq), branchKey: key, seq, ...turn }, work)) === 'inserted';
  }

  return {
    turnModel: Turns,
    models: [Branches, BaseAgents, Turns, TurnResults, Decisions, MergeSteps, CopilotRuns],
    /** Stores the copy of the project's agents (before the branch that names it: a branch never points at a partial copy). */
    async insertBaseAgents(
      copyId: string,
      agents: Array<{ agentId: string; definition: string; updatedAt: string | null }>,
    ): Promise<void> {
      // Few documents per statement: batched writes hold a connection per statement on FerretDB.
      for (let i = 0; i < agents.length; i += 8) {
        const batch = agents.slice(i, i + 8).map((a) => ({ _id: `${copyId}#${a.agentId}`, copyId, ...a }));
        await BaseAgents.collection.insertMany(batch as never[]);
      }
    },
    async baseAgents(copyId: string): Promise<BaseAgentDoc[]> {
      if (!copyId) return [];
      return BaseAgents.find({ copyId }).lean();
    },
    /** Inserts the branch; false when the branch name is taken. */
    async insertBranch(branch: Omit<BranchDoc, '_id'>): Promise<boolean> {
      return insertOnce(Branches, { _id: branchKey(branch, branch.branchName), ...branch });
    },
    async find(scope: ProjectScope, branchName: string): Promise<BranchState | null> {
      const b = await Branches.findOne({ _id: branchKey(scope, branchName), ...scoped(scope) }).lean();
      return b ? load(b) : null;
    },
    async list(scope: ProjectScope, max = 200): Promise<BranchState[]> {
      const rows = await Branches.find(scoped(scope)).sort({ createdAt: -1 }).limit(max).lean();
      return Promise.all(rows.map(load));
    },
    /** Claims turn `seq` (false when another message took it first) and queues its work item, if any. */
    insertTurn: insertTurnWithWork,
    /** Stores the answer to turn `seq` once; false when it already has one (another worker answered it). */
    async insertResult(
      key: string,
      seq: number,
      result: Omit<StoredTurnResult, '_id' | 'branchKey' | 'seq' | 'finishedAt'>,
    ): Promise<boolean> {
      return insertOnce(TurnResults, { _id: turnId(key, seq), branchKey: key, seq, ...result, finishedAt: new Date() });
    },
    async resultExists(key: string, seq: number): Promise<boolean> {
      return (await TurnResults.exists({ _id: turnId(key, seq) })) !== null;
    },
    /** Records the branch's final decision; false when it already has one. */
    async decide(decision: Omit<StoredDecision, 'at' | 'completedAt'>): Promise<boolean> {
      return insertOnce(Decisions, {
        ...decision,
        at: new Date(),
        completedAt: decision.agentIds.length ? null : new Date(),
      });
    },
    /** Records what a merge did to one agent (once; a second writer of the same step changes nothing). */
    async insertMergeStep(
      key: string,
      agentId: string,
      outcome: MergeStepDoc['outcome'],
      detail: string | null,
    ): Promise<void> {
      await insertOnce(MergeSteps, {
        _id: `${key}#${agentId}`,
        branchKey: key,
        agentId,
        outcome,
        detail,
        at: new Date(),
      });
    },
    /** Every agent of the merge has its step. Idempotent: every writer sets the same field to "done". */
    async completeMerge(key: string): Promise<void> {
      await Decisions.updateOne({ _id: key, completedAt: null }, { $set: { completedAt: new Date() } });
    },
    /** Merges decided before `before` whose agents are not all written yet (a process stopped in the middle). */
    async unfinishedMerges(before: Date, max = 50): Promise<StoredDecision[]> {
      return Decisions.find({ decision: 'merged', completedAt: null, at: { $lt: before } })
        .limit(max)
        .lean();
    },
    async findByKey(key: string): Promise<BranchState | null> {
      const b = await Branches.findById(key).lean();
      return b ? load(b) : null;
    },
    async insertCopilotRun(scope: ProjectScope, id: string, conversationId: string): Promise<void> {
      await CopilotRuns.collection.insertOne({
        _id: scopedId(scope, id),
        id,
        ...scope,
        conversationId,
        status: 'running',
        createdAt: new Date(),
      } as never);
    },
  };
}
