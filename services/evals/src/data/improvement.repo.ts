import type { ProjectScope } from '@platform/contracts';
import { isDuplicateKey, scoped, scopedId, type Connection } from '@platform/mongo';
import { improvementModels, type BranchDoc, type DecisionDoc, type TurnDoc } from './improvement.model';

export const branchKey = (scope: ProjectScope, branchName: string) => scopedId(scope, branchName);
const turnId = (key: string, seq: number) => `${key}#${String(seq).padStart(6, '0')}`;

export interface BranchState {
  branch: BranchDoc;
  turns: TurnDoc[];
  decision: DecisionDoc | null;
}

export type ImprovementRepo = ReturnType<typeof improvementRepo>;

export function improvementRepo(db: Connection) {
  const { Branches, Turns, Decisions, CopilotRuns } = improvementModels(db);

  async function load(branch: BranchDoc): Promise<BranchState> {
    const [turns, decision] = await Promise.all([
      Turns.find({ branchKey: branch._id }).sort({ seq: 1 }).lean<TurnDoc[]>(),
      Decisions.findById(branch._id).lean<DecisionDoc>(),
    ]);
    return { branch, turns, decision: decision ?? null };
  }

  return {
    models: [Branches, Turns, Decisions, CopilotRuns],
    /** Inserts the branch and its first turn; false when the branch name is taken. */
    async insertBranch(branch: Omit<BranchDoc, '_id'>, firstTurn: Omit<TurnDoc, '_id' | 'branchKey' | 'seq'>): Promise<boolean> {
      const _id = branchKey(branch, branch.branchName);
      try {
        await Branches.collection.insertOne({ _id, ...branch } as never);
      } catch (err) {
        if (isDuplicateKey(err)) return false;
        throw err;
      }
      await Turns.collection.insertOne({ _id: turnId(_id, 1), branchKey: _id, seq: 1, ...firstTurn } as never);
      return true;
    },
    async find(scope: ProjectScope, branchName: string): Promise<BranchState | null> {
      const b = await Branches.findOne({ _id: branchKey(scope, branchName), ...scoped(scope) }).lean<BranchDoc>();
      return b ? load(b) : null;
    },
    async list(scope: ProjectScope, max = 200): Promise<BranchState[]> {
      const rows = await Branches.find(scoped(scope)).sort({ createdAt: -1 }).limit(max).lean<BranchDoc[]>();
      return Promise.all(rows.map(load));
    },
    /** Claims the next turn number; false when another message took it first. */
    async insertTurn(key: string, seq: number, turn: Omit<TurnDoc, '_id' | 'branchKey' | 'seq'>): Promise<boolean> {
      try {
        await Turns.collection.insertOne({ _id: turnId(key, seq), branchKey: key, seq, ...turn } as never);
        return true;
      } catch (err) {
        if (isDuplicateKey(err)) return false;
        throw err;
      }
    },
    /** Finishes a turn; only the request that inserted it calls this (single writer). */
    async finishTurn(key: string, seq: number, set: Pick<TurnDoc, 'status' | 'statusMessage' | 'assistantMessage' | 'definition'>): Promise<void> {
      await Turns.updateOne({ _id: turnId(key, seq) }, { $set: { ...set, finishedAt: new Date() } });
    },
    /** Records the branch's final decision; false when it already has one. */
    async decide(key: string, decision: DecisionDoc['decision']): Promise<boolean> {
      try {
        await Decisions.collection.insertOne({ _id: key, decision, at: new Date() } as never);
        return true;
      } catch (err) {
        if (isDuplicateKey(err)) return false;
        throw err;
      }
    },
    /** Withdraws a decision this request recorded (its follow-up failed). */
    async undecide(key: string): Promise<void> {
      await Decisions.deleteOne({ _id: key });
    },
    async insertCopilotRun(scope: ProjectScope, id: string, conversationId: string): Promise<void> {
      await CopilotRuns.collection.insertOne({ _id: scopedId(scope, id), id, ...scope, conversationId, status: 'running', createdAt: new Date() } as never);
    },
  };
}
