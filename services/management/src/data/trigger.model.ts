import { mongoose, scopedSchema, type Connection, type Model, type StoredDoc } from '@platform/mongo';

/**
 * `_id` is `<tenant>:<project>:<agent>:<id>` (ids are unique per agent). Free-form JSON (`inputSchema`,
 * `outputTransform`) is kept as text: JSON Schema keys start with `$`, which not every Mongo-wire server accepts.
 * `authentication` holds header names and keyed hashes of their values only.
 */
const schema = scopedSchema(
  {
    agentId: { type: String, required: true },
    name: { type: String, required: true },
    description: { type: String, default: null },
    enabled: { type: Boolean, required: true },
    dispatchDelayMs: { type: Number, required: true },
    messageTemplate: { type: String, default: null },
    inputSchemaJson: { type: String, default: null },
    outputTransformJson: { type: String, default: null },
    runAsUserId: { type: String, default: null },
    runAsUserIds: { type: [String], default: [] },
    createdBy: { type: String, default: null },
    authentication: { type: mongoose.Schema.Types.Mixed, default: null },
    signingSecretCredentialReferenceId: { type: String, default: null },
    signatureVerificationJson: { type: String, default: null },
    deliveryIdHeader: { type: String, default: null },
    rateLimitPerMinute: { type: Number, default: null },
    bodyLimitBytes: { type: Number, default: null },
    revision: { type: Number, required: true },
  },
  { collection: 'triggers', minimize: false },
);
schema.index({ tenantId: 1, projectId: 1, agentId: 1, createdAt: -1, _id: 1 });
schema.index({ tenantId: 1, projectId: 1, signingSecretCredentialReferenceId: 1 });

// authentication is a Mixed path (InferSchemaType types it as `any`).
export type TriggerDoc = StoredDoc<typeof schema, string, { authentication: { headers: StoredAuthHeader[] } | null }>;

export function triggerModel(db: Connection): Model<TriggerDoc> {
  return db.models.Trigger ?? db.model<TriggerDoc>('Trigger', schema);
}

export interface StoredAuthHeader {
  name: string;
  /** keyedHash(TOKEN_PEPPER, value) */
  valueHash: string;
}
