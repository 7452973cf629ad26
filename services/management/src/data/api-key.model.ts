import { scopedSchema, type Connection, type Model, type StoredDoc } from '@platform/mongo';
import { outboxFields, type PendingEventsField } from '@platform/outbox';

/** `_id` is the key's public id (also its `id`), so verification is a primary-key lookup. */
const schema = scopedSchema(
  {
    agentId: { type: String, required: true },
    name: { type: String, required: true },
    keyPrefix: { type: String, required: true },
    keyHash: { type: String, required: true },
    expiresAt: { type: Date, default: null },
    lastUsedAt: { type: Date, default: null },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
    /**
     * True from creation until the key is revoked (then false, while the outbox publishes its deletion). Reads filter
     * on `live: true`, an equality every Mongo-wire server can serve (FerretDB applies `$ne` itself, over every row).
     */
    live: { type: Boolean, default: undefined },
    ...outboxFields,
  },
  { collection: 'apiKeys', id: false, timestamps: false, minimize: false },
);
schema.index({ tenantId: 1, projectId: 1, createdAt: -1, _id: 1 });
schema.index({ tenantId: 1, projectId: 1, agentId: 1, createdAt: -1, _id: 1 });

// pendingEvents is a Mixed path (InferSchemaType types it as `any`).
export type ApiKeyDoc = StoredDoc<typeof schema, string, PendingEventsField>;

export function apiKeyModel(db: Connection): Model<ApiKeyDoc> {
  return db.models.ApiKey ?? db.model<ApiKeyDoc>('ApiKey', schema);
}
