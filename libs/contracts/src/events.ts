import { z } from 'zod';
import { event } from './event';
import { RunEvent } from './run/events';
import { WebhookDestination } from './manage/webhook-destinations';
import { App } from './manage/apps';
import { WebhookDeliveryAttempt } from './manage/webhook-deliveries';
import { auditRecorded } from './manage/audit-log';

/** A run event was stored (POST /run/v1/events, 201). Feeds the `event.created` webhook family. */
export const eventCreated = event({
  name: 'event.created',
  version: 1,
  publisher: 'events-ingest',
  description:
    'A run event was stored. `data.event` is the persisted event; `data.dispatch` says whether webhook delivery applies (an agent scope and a resolved ref existed).',
  payload: z.object({ event: RunEvent, dispatch: z.boolean() }),
  webhookFamily: 'event.created',
});

const DestinationChange = z.object({ destination: WebhookDestination });

export const webhookDestinationCreated = event({
  name: 'webhook-destination.created',
  version: 1,
  publisher: 'management',
  description: 'A webhook destination was created.',
  payload: DestinationChange,
});
export const webhookDestinationUpdated = event({
  name: 'webhook-destination.updated',
  version: 1,
  publisher: 'management',
  description: 'A webhook destination was changed (the payload carries the whole new state).',
  payload: DestinationChange,
});
export const webhookDestinationDeleted = event({
  name: 'webhook-destination.deleted',
  version: 1,
  publisher: 'management',
  description: 'A webhook destination was deleted.',
  payload: z.object({ id: z.string() }),
});

export const apiKeyRevoked = event({
  name: 'api-key.revoked',
  version: 1,
  publisher: 'management',
  description: 'An API key was deleted or changed; caches of its verification must drop it.',
  payload: z.object({ id: z.string(), publicId: z.string() }),
});

/** Feedback was recorded (management). Feeds the `feedback.created` webhook family. */
export const feedbackCreated = event({
  name: 'feedback.created',
  version: 1,
  publisher: 'management',
  description: 'Feedback on a conversation or message was recorded. `data.feedback` is the stored record.',
  payload: z.object({
    feedback: z
      .object({
        id: z.string(),
        conversationId: z.string(),
        messageId: z.string().nullable().optional(),
        type: z.enum(['positive', 'negative']),
        details: z.string().nullable().optional(),
        agentId: z.string().nullable().optional(),
        createdAt: z.string(),
        updatedAt: z.string(),
      })
      .catchall(z.unknown()),
  }),
  webhookFamily: 'feedback.created',
});

/** An evaluation of a conversation failed its pass criteria (evals). Feeds the `evaluation.failed` family, scoped by evaluator. */
export const evaluationFailed = event({
  name: 'evaluation.failed',
  version: 1,
  publisher: 'evals',
  description:
    'An evaluator judged a conversation as failed. Destinations scoped with `evaluatorIds` receive only their evaluators.',
  payload: z
    .object({
      evaluator: z.object({ id: z.string(), name: z.string() }),
      conversation: z.object({ id: z.string(), agentId: z.string().nullable().optional() }).catchall(z.unknown()),
      failedConditions: z.array(
        z
          .object({ field: z.string(), operator: z.string(), value: z.unknown(), actual: z.unknown() })
          .catchall(z.unknown()),
      ),
      evaluationRunId: z.string().nullable().optional(),
      resultId: z.string(),
    })
    .catchall(z.unknown()),
  webhookFamily: 'evaluation.failed',
});

const AgentSummary = z.object({ id: z.string(), name: z.string(), subAgentIds: z.array(z.string()) });

/** A full agent definition was created (management). */
export const agentCreated = event({
  name: 'agent.created',
  version: 1,
  publisher: 'management',
  description:
    'A full agent was created. `data.agent` names it and its sub-agents; ask GET_AGENT_DEFINITION_SUBJECT for the definition.',
  payload: z.object({ agent: AgentSummary }),
});

/** A sub-agent attachment of an agent changed. */
const AttachmentChange = z.object({
  kind: z.enum(['external-agent', 'skill', 'tool', 'data-component', 'artifact-component', 'function-tool']),
  action: z.enum(['attached', 'updated', 'detached']),
  subAgentId: z.string(),
  targetId: z.string().describe('The attached external agent, skill, tool, component or function tool id'),
  relationId: z.string(),
});
/** The whole definition was replaced (PUT PA, or an improvement branch was merged). */
const DefinitionChange = z.object({
  kind: z.literal('definition'),
  action: z.literal('replaced'),
  branchName: z
    .string()
    .nullable()
    .describe('The improvement branch whose merge replaced it; null for a replacement through PUT PA'),
});

/** An agent changed (management). */
export const agentUpdated = event({
  name: 'agent.updated',
  version: 1,
  publisher: 'management',
  description:
    'An agent changed: a sub-agent attachment was added, changed or removed (`change.kind` names it), or the whole definition was replaced, through PUT PA or by a merged improvement branch (`change.kind: "definition"`, `branchName` names the branch). Webhook destinations may subscribe to it (agent scope: `data.agent.id`).',
  payload: z.object({
    agent: AgentSummary,
    change: z.union([AttachmentChange, DefinitionChange]),
  }),
  webhookFamily: 'agent.updated',
});

/** An agent was deleted (management). */
export const agentDeleted = event({
  name: 'agent.deleted',
  version: 1,
  publisher: 'management',
  description:
    'An agent was deleted (DELETE PA), with its attachments, its triggers and the API keys bound to it (each key also announces `api-key.revoked`). `data.agent` is the agent as it was. Webhook destinations may subscribe to it (agent scope: `data.agent.id`).',
  payload: z.object({ agent: AgentSummary }),
  webhookFamily: 'agent.deleted',
});

/** A trigger's webhook call was accepted: one execution request per run-as user (management). */
export const triggerInvoked = event({
  name: 'trigger.invoked',
  version: 1,
  publisher: 'management',
  description:
    'One execution request of an accepted trigger invocation, for one run-as user (a trigger with n users gives n events, `dispatchDelayMs` apart). ' +
    'The agent runtime consumes it; webhook destinations may subscribe to it (agent scope: `data.agentId`). The event id is `<invocationId>-<index>`.',
  payload: z.object({
    tenantId: z.string(),
    projectId: z.string(),
    agentId: z.string(),
    triggerId: z.string(),
    invocationId: z.string(),
    userId: z.string().nullable().describe('The run-as user; null when the trigger names none'),
    message: z
      .string()
      .describe('The rendered messageTemplate (the transformed input as JSON when the trigger has no template)'),
    input: z.unknown().describe('The input after outputTransform'),
    dispatchIndex: z.number().int().describe("Position of this user among the invocation's requests (0-based)"),
    rerunOf: z.string().nullable().describe('The invocation this one reruns, if any'),
  }),
  webhookFamily: 'trigger.invoked',
});

const AppChange = z.object({ app: App });

export const appCreated = event({
  name: 'app.created',
  version: 1,
  publisher: 'management',
  description: 'An app (app credential) was created.',
  payload: AppChange,
});
export const appUpdated = event({
  name: 'app.updated',
  version: 1,
  publisher: 'management',
  description:
    'An app or its public keys changed (the payload carries the whole new state); caches of the app must drop it.',
  payload: AppChange,
});
export const appDeleted = event({
  name: 'app.deleted',
  version: 1,
  publisher: 'management',
  description: 'An app was deleted; its credentials stop working.',
  payload: z.object({ id: z.string() }),
});
/**
 * Conversation events (the `conversation` webhook family). Published by the run side that executes conversations
 * (the chat runtime; not built yet): declared here so producers and the webhook dispatcher share one shape.
 * `data.conversation` is the conversation detail (messages in UI-message `parts` form); the four error events
 * add `data.error`. Webhook receivers get `data` as published.
 */
const ConversationPayload = z
  .object({
    conversation: z.object({ id: z.string(), agentId: z.string().nullable().optional() }).catchall(z.unknown()),
    agentName: z.string().optional().describe('Shown as `agentName` in the webhook envelope'),
    error: z.object({ message: z.string(), code: z.string().optional() }).catchall(z.unknown()).optional(),
  })
  .catchall(z.unknown());

function conversationEvent(name: string, description: string) {
  return event({
    name,
    version: 1,
    publisher: 'events-ingest',
    description,
    payload: ConversationPayload,
    webhookFamily: 'conversation',
  });
}
export const conversationCreated = conversationEvent('conversation.created', 'A conversation was started.');
export const conversationUpdated = conversationEvent(
  'conversation.updated',
  'A conversation changed (new messages, properties).',
);
export const conversationExecutionError = conversationEvent(
  'conversation.execution.error',
  'Running the agent on a conversation failed.',
);
export const conversationGenerationError = conversationEvent(
  'conversation.generation.error',
  'The model failed to generate a reply.',
);
export const conversationToolError = conversationEvent(
  'conversation.tool.error',
  'A tool call failed during a conversation.',
);
export const conversationContextError = conversationEvent(
  'conversation.context.error',
  'Resolving the conversation context failed.',
);

/** The final outcome of one webhook delivery (webhook dispatcher): what it delivered, where, and how it went. */
const DeliveryOutcome = z.object({
  delivery: z.object({
    id: z.string().describe('The delivery id (its `webhook-id` header)'),
    destinationId: z.string(),
    eventId: z.string().describe('Id of the platform event that was delivered'),
    eventType: z.string().describe('Its type, e.g. event.created'),
    attemptCount: z.number().int(),
    lastStatusCode: z
      .number()
      .int()
      .nullable()
      .describe('HTTP status of the last attempt; null when there was no answer or for chat channels'),
    lastError: z.string().nullable(),
    lastAttempt: WebhookDeliveryAttempt,
  }),
});

export const webhookDeliverySucceeded = event({
  name: 'webhook.delivery.succeeded',
  version: 1,
  publisher: 'webhook-dispatcher',
  description:
    'A webhook delivery was accepted by its destination (2xx, or posted to the chat channel). Test deliveries are not announced.',
  payload: DeliveryOutcome,
});
export const webhookDeliveryFailed = event({
  name: 'webhook.delivery.failed',
  version: 1,
  publisher: 'webhook-dispatcher',
  description:
    'A webhook delivery gave up: a permanent failure, 410 Gone, or no retries left. Deliveries cancelled because the destination was disabled or deleted are not announced.',
  payload: DeliveryOutcome,
});

/** Every event a webhook destination can subscribe to (its `type` in the delivered envelope is the event name). */
export const webhookEvents = [
  conversationCreated,
  conversationUpdated,
  conversationExecutionError,
  conversationGenerationError,
  conversationToolError,
  conversationContextError,
  feedbackCreated,
  eventCreated,
  evaluationFailed,
  agentUpdated,
  agentDeleted,
  triggerInvoked,
];

/** Every event we publish, for the AsyncAPI document and consumers. */
export const allEvents = [
  eventCreated,
  feedbackCreated,
  evaluationFailed,
  conversationCreated,
  conversationUpdated,
  conversationExecutionError,
  conversationGenerationError,
  conversationToolError,
  conversationContextError,
  webhookDestinationCreated,
  webhookDestinationUpdated,
  webhookDestinationDeleted,
  apiKeyRevoked,
  agentCreated,
  agentUpdated,
  agentDeleted,
  triggerInvoked,
  appCreated,
  appUpdated,
  appDeleted,
  webhookDeliverySucceeded,
  webhookDeliveryFailed,
  auditRecorded,
];
