import type { Feedback, PendingEvent, ProjectScope } from '@platform/contracts';
import { iso, scoped, scopedId, type Connection, listPage } from '@platform/mongo';
import type { Outbox } from '@platform/outbox';
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

export type FeedbackRepo = ReturnType<typeof feedbackRepo>;

export function feedbackRepo(db: Connection, outbox: Outbox) {
  const Model = feedbackModel(db);
  const writer = outbox.of(Model);
  const { hidden, live } = writer;

  return {
    model: Model,
    /** One write: the record, with its events published once it is stored. Null when the id is taken. */
    async insert(
      doc: Omit<StoredFeedback, '_id'>,
      events: (f: Feedback) => PendingEvent[],
    ): Promise<StoredFeedback | null> {
      const full: StoredFeedback = { _id: scopedId(doc, doc.id), ...doc };
      return (await writer.insert({ ...full }, events(toFeedback(full)))) === 'inserted' ? full : null;
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
      return listPage(Model, { filter: q, sort: { createdAt: -1, _id: 1 }, projection: hidden }, page, limit);
    },
    async update(scope: ProjectScope, id: string, set: Partial<StoredFeedback>): Promise<StoredFeedback | null> {
      return writer.update({ _id: scopedId(scope, id), ...scoped(scope) }, { $set: set });
    },
    /** Erasure of a conversation: its feedback goes, events still waiting in the outbox with it (they are its data). */
    async eraseConversation(scope: ProjectScope, conversationId: string): Promise<number> {
      return (await Model.deleteMany({ ...scoped(scope), conversationId })).deletedCount;
    },
    /**
     * Hides the record at once and deletes it once the outbox is done with it, so a `feedback.created` accepted before
     * the delete is never lost.
     */
    async remove(scope: ProjectScope, id: string): Promise<boolean> {
      return (await writer.remove({ _id: scopedId(scope, id), ...scoped(scope) })) !== null;
    },
  };
}
