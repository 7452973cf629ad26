import { webhookSecretBinding } from '@platform/contracts';
import {
  mongoose,
  scopedSchema,
  type Connection,
  type Model,
  type SealedFields,
  type StoredDoc,
} from '@platform/mongo';
import { outboxFields, type PendingEventsField } from '@platform/outbox';

/** `_id` is `<tenant>:<project>:<id>` (ids are unique per project). */
const schema = scopedSchema(
  {
    name: { type: String, required: true },
    description: { type: String, default: null },
    enabled: { type: Boolean, required: true },
    eventTypes: { type: [String], required: true },
    agentIds: { type: [String], default: [] },
    evaluatorIds: { type: [String], default: [] },
    headers: { type: mongoose.Schema.Types.Mixed, default: {} },
    url: { type: String, default: null },
    chatappChannelId: { type: String, default: null },
    /** Why delivery turned it off (410 Gone, failing for days); null otherwise. */
    disabledReason: { type: String, default: null },
    /** Sealed (SecretBox, bound by `webhookSecretBinding`) Standard Webhooks signing secret `whsec_…`. */
    secret: { type: String, default: null },
    /** The sealed secret before the last rotation; it keeps signing until `previousSecretExpiresAt`. */
    previousSecret: { type: String, default: null },
    previousSecretExpiresAt: { type: Date, default: null },
    revision: { type: Number, required: true },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
    ...outboxFields,
  },
  { collection: 'webhookDestinations', timestamps: false, minimize: false },
);
schema.index({ tenantId: 1, projectId: 1, createdAt: -1, _id: 1 });
schema.index({ tenantId: 1, projectId: 1, agentIds: 1 });

// headers and pendingEvents are Mixed paths (InferSchemaType types them as `any`); headers is the map, or its JSON
// text when a header name cannot be a field name (`$…`, `a.b`).
export type WebhookDestinationDoc = StoredDoc<
  typeof schema,
  string,
  PendingEventsField & { headers: Record<string, string> | string }
>;

export function webhookDestinationModel(db: Connection): Model<WebhookDestinationDoc> {
  return db.models.WebhookDestination ?? db.model<WebhookDestinationDoc>('WebhookDestination', schema);
}

/** The signing secrets of each destination (`pnpm secrets:reencrypt`). */
export const webhookDestinationSealed: SealedFields<WebhookDestinationDoc> = {
  collection: 'webhookDestinations',
  fields: ['secret', 'previousSecret'],
  bindingOf: (d) => webhookSecretBinding(d),
};
