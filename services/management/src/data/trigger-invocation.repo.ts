import type { AgentPath } from '@platform/contracts';
import { unlessDuplicate, type Connection, listPage } from '@platform/mongo';
import { sha256Hex } from '@platform/secrets';
import { triggerInvocationModel, type StoredDispatch, type TriggerInvocationDoc } from './trigger-invocation.model';
export type { StoredDispatch } from './trigger-invocation.model';

/** One call of a trigger as the domain sees it: a plain object (the model's document type stays in data/). */
export interface StoredTriggerInvocation {
  _id: string;
  id: string;
  tenantId: string;
  projectId: string;
  agentId: string;
  triggerId: string;
  deliveryId?: string | null;
  rerunOf?: string | null;
  message?: string | null;
  inputJson?: string | null;
  bodyBytes: number;
  dispatchPending?: boolean | null;
  traceparent?: string | null;
  receivedAt: Date;
  completedAt?: Date | null;
  verdicts: { authentication: string; signature: string; schema: string };
  error: { status: number; detail: string } | null;
  dispatches: Record<string, StoredDispatch>;
  status: 'rejected' | 'accepted';
}

export interface TriggerScope extends AgentPath {
  triggerId: string;
}

const scopeOf = (s: TriggerScope) => ({
  tenantId: s.tenantId,
  projectId: s.projectId,
  agentId: s.agentId,
  triggerId: s.triggerId,
});

/** The `_id` of an invocation: by its id, or by the provider's delivery id (so a retry collides with the first call). */
export function invocationKey(s: TriggerScope, by: { id: string } | { deliveryId: string }): string {
  const tail = 'deliveryId' in by ? ['delivery', by.deliveryId] : ['id', by.id];
  return sha256Hex(JSON.stringify([s.tenantId, s.projectId, s.agentId, s.triggerId, ...tail]));
}

export type TriggerInvocationRepo = ReturnType<typeof triggerInvocationRepo>;

export function triggerInvocationRepo(db: Connection) {
  const Model = triggerInvocationModel(db);
  return {
    model: Model,
    /** Stores an invocation; null when its `_id` is taken (the same delivery id was accepted before). */
    async insert(doc: StoredTriggerInvocation): Promise<StoredTriggerInvocation | null> {
      return (await unlessDuplicate(() => Model.create(doc))) ? doc : null;
    },
    async findByKey(key: string): Promise<StoredTriggerInvocation | null> {
      return Model.findOne({ _id: key }).lean<StoredTriggerInvocation>();
    },
    async findById(s: TriggerScope, id: string): Promise<StoredTriggerInvocation | null> {
      return Model.findOne({ ...scopeOf(s), id }).lean<StoredTriggerInvocation>();
    },
    async list(s: TriggerScope, page: number, limit: number) {
      const q = scopeOf(s);
      return listPage<TriggerInvocationDoc, StoredTriggerInvocation>(
        Model,
        { filter: q, sort: { receivedAt: -1, _id: 1 } },
        page,
        limit,
      );
    },
    /** Invocations with requests not yet on JetStream (at most 500; `dispatchPending` is an equality every server serves). */
    async withPendingDispatches(): Promise<StoredTriggerInvocation[]> {
      return Model.find({ dispatchPending: true }).limit(500).lean<StoredTriggerInvocation[]>();
    },
    /** Records that one request was published. */
    async markDispatched(key: string, index: number, at: Date): Promise<void> {
      await Model.updateOne(
        { _id: key },
        { $set: { [`dispatches.d${index}.state`]: 'dispatched', [`dispatches.d${index}.dispatchedAt`]: at } },
      );
    },
    /** Clears `dispatchPending` once every request is published (the filter names each one's state). */
    async markComplete(key: string, dispatches: StoredDispatch[], at: Date): Promise<void> {
      const allDone = Object.fromEntries(dispatches.map((d) => [`dispatches.d${d.index}.state`, 'dispatched']));
      await Model.updateOne(
        { _id: key, dispatchPending: true, ...allDone },
        { $unset: { dispatchPending: 1 }, $set: { completedAt: at } },
      );
    },
  };
}
