import { mongoose, scopedSchema, type Connection, type Model, type StoredDoc } from '@platform/mongo';

/**
 * One webhook call of a trigger (accepted or rejected) or one rerun. `_id` is a hash of the scope and either the
 * invocation id or, for an accepted call with a delivery id, the delivery id: a provider's retry collides with the
 * first call and is answered with it. `inputJson` is text (provider payloads have keys no Mongo-wire server stores).
 * `dispatches` maps `d<index>` to one run-as user's request; `dispatchPending` (sparse) marks invocations whose
 * requests are not all on JetStream yet: the dispatcher's sweep reads only those.
 */
const schema = scopedSchema(
  {
    agentId: { type: String, required: true },
    triggerId: { type: String, required: true },
    status: { type: String, required: true },
    verdicts: { type: mongoose.Schema.Types.Mixed, required: true },
    error: { type: mongoose.Schema.Types.Mixed, default: null },
    deliveryId: { type: String, default: null },
    rerunOf: { type: String, default: null },
    message: { type: String, default: null },
    inputJson: { type: String, default: null },
    bodyBytes: { type: Number, required: true },
    dispatches: { type: mongoose.Schema.Types.Mixed, default: {} },
    dispatchPending: { type: Boolean, default: undefined },
    traceparent: { type: String, default: undefined },
    receivedAt: { type: Date, required: true },
    completedAt: { type: Date, default: null },
  },
  { collection: 'triggerInvocations', timestamps: false, minimize: false },
);
schema.index({ tenantId: 1, projectId: 1, agentId: 1, triggerId: 1, receivedAt: -1, _id: 1 });
schema.index({ tenantId: 1, projectId: 1, agentId: 1, triggerId: 1, id: 1 });
schema.index({ dispatchPending: 1 }, { sparse: true });

export interface StoredDispatch {
  index: number;
  userId: string | null;
  state: 'pending' | 'dispatched';
  eventId: string;
  dueAt: Date;
  dispatchedAt: Date | null;
}

export type TriggerInvocationDoc = StoredDoc<
  typeof schema,
  string,
  {
    verdicts: { authentication: string; signature: string; schema: string };
    error: { status: number; detail: string } | null;
    dispatches: Record<string, StoredDispatch>;
    status: 'rejected' | 'accepted';
  }
>;

export function triggerInvocationModel(db: Connection): Model<TriggerInvocationDoc> {
  return db.models.TriggerInvocation ?? db.model<TriggerInvocationDoc>('TriggerInvocation', schema);
}
