import type { Feedback, PendingEvent, ProjectScope } from '@platform/contracts';
import { unlessDuplicate, iso, scoped, scopedId, type Connection } from '@platform/mongo';
import { live, outboxOnCreate, outboxOnDelete, type OutboxRelay } from '@platform/outbox';
import { feedbackModel } from './feedback.model';

/** One feedback as the domain sees it: a plain object (the model's document type stays in data/). */
export interface StoredFeedback {
  _id: string;
  id: string;
  tenantId: string;
  projectId: string;
  conversationId: string;
  messageId?: string | null;
  agentId?: string | null;
  details?: string | null;
  createdAt: Date;
  updatedAt: Date;
  type: 'positive' | 'negative';
}

export function toFeedback(d: StoredFeedback): Feedback {
  return {
    id: d.id,
    conversationId: d.conversationId,
    messageId: d.messageId ?? null,
    agentId: d.agentId ?? null,
    type: d.type,
    details: d.details ?? null,
    createdAt: iso(d.createdAt)!,
    updatedAt: iso(d.updatedAt)!,
  };
}

export interface FeedbackFilter {
  conversationId?: string;
  messageId?: string;
  agentId?: string;
  type?: string;
  startDate?: string;
  endDate?: string;
}

const hidden = { pendingEvents: 0, outboxPending: 0, outboxSeq: 0, outboxDelete: 0 };

export type FeedbackRepo = ReturnType<typeof feedbackRepo>;

export function feedbackRepo(db: Connection, relay: OutboxRelay) {
  const Model = feedbackModel(db);

  /**
   * Waits (briefly) until the relay has finished with a record's creation event. The Mongo-wire server we run on
   * rewrites whole documents, so two writes to one document at once can lose one of them: a change made while the
   * relay clears the outbox flags could be undone by the relay's write. Feedback only has events at creation, so
   * once settled the relay never writes the record again. After the wait the change goes ahead regardless
   * (a relay that cannot publish writes nothing either).
   */
  async function outboxSettled(_id: string, waitMs = 3000): Promise<void> {
    const deadline = Date.now() + waitMs;
    while (await Model.exists({ _id, outboxPending: true, ...live })) {
      if (Date.now() > deadline) return;
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  return {
    model: Model,
    /** One write: the record and its pending events. Throws a duplicate-key error when the id is taken. */
    /** Null when the id is taken. */
    async insert(doc: Omit<StoredFeedback, '_id'>, events: (f: Feedback) => PendingEvent[]): Promise<StoredFeedback | null> {
      const full: StoredFeedback = { _id: scopedId(doc, doc.id), ...doc };
      const outbox = outboxOnCreate(events(toFeedback(full)));
      if (!(await unlessDuplicate(() => Model.create({ ...full, ...outbox })))) return null;
      relay.flush({ _id: full._id, outboxSeq: outbox.outboxSeq, pendingEvents: outbox.pendingEvents });
      return full;
    },
    async findById(scope: ProjectScope, id: string): Promise<StoredFeedback | null> {
      return Model.findOne({ _id: scopedId(scope, id), ...scoped(scope), ...live }, hidden).lean();
    },
    async list(scope: ProjectScope, filter: FeedbackFilter, page: number, limit: number) {
      const createdAt: Record<string, Date> = {};
      if (filter.startDate) createdAt.$gte = new Date(filter.startDate);
      if (filter.endDate) createdAt.$lte = new Date(filter.endDate);
      const q = {
        ...scoped(scope),
        ...live,
        ...(filter.conversationId ? { conversationId: filter.conversationId } : {}),
        ...(filter.messageId ? { messageId: filter.messageId } : {}),
        ...(filter.agentId ? { agentId: filter.agentId } : {}),
        ...(filter.type ? { type: filter.type } : {}),
        ...(Object.keys(createdAt).length ? { createdAt } : {}),
      };
      const [rows, total] = await Promise.all([
        Model.find(q, hidden).sort({ createdAt: -1, _id: 1 }).skip((page - 1) * limit).limit(limit).lean(),
        Model.countDocuments(q),
      ]);
      return { rows, total };
    },
    async update(scope: ProjectScope, id: string, set: Partial<StoredFeedback>): Promise<StoredFeedback | null> {
      await outboxSettled(scopedId(scope, id));
      return Model.findOneAndUpdate({ _id: scopedId(scope, id), ...scoped(scope), ...live }, { $set: set }, { new: true }).lean();
    },
    /** Erasure of a conversation: its feedback goes, events still waiting in the outbox with it (they are its data). */
    async eraseConversation(scope: ProjectScope, conversationId: string): Promise<number> {
      return (await Model.deleteMany({ ...scoped(scope), conversationId })).deletedCount;
    },
    /**
     * Deletes at once when nothing is waiting in its outbox; otherwise hides it and lets the relay delete it
     * after publishing, so a `feedback.created` accepted before the delete is never lost.
     */
    async remove(scope: ProjectScope, id: string): Promise<boolean> {
      const _id = scopedId(scope, id);
      await outboxSettled(_id);
      const r = await Model.deleteOne({ _id, ...scoped(scope), ...live, outboxPending: { $ne: true } });
      if (r.deletedCount === 1) return true;
      const ops = outboxOnDelete([]);
      const d = await Model.findOneAndUpdate({ _id, ...scoped(scope), ...live }, { $set: ops.$set, $inc: ops.$inc }, { new: true }).lean<{
        _id: string;
        outboxSeq?: number;
        outboxDelete?: boolean;
        pendingEvents?: Record<string, PendingEvent>;
      }>();
      if (!d) return false;
      if (Object.keys(d.pendingEvents ?? {}).length) relay.flush(d);
      // The relay published everything in between: nothing is left to wait for.
      else await Model.deleteOne({ _id, outboxSeq: d.outboxSeq });
      return true;
    },
  };
}
