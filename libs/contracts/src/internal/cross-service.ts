import { z } from 'zod';
import { FullAgent } from '../manage/agents';
import { RunEvent } from '../run/events';

/**
 * Request and reply bodies of internal calls between services (NATS only, never exposed over HTTP). The calls
 * themselves (subject, owner, callers) are declared in `internal/calls.ts`; the owner serves one with
 * `bus.serveInternal(def, …)` and a caller sends it with `bus.callInternal(def, request)`.
 */

/** Owner: management. Does an agent exist in a project? Used by chatapp (channel agent configs) and evals. */
export const LookupAgentRequest = z.object({ tenantId: z.string(), projectId: z.string(), agentId: z.string() });
export const LookupAgentReply = z.object({
  exists: z.boolean(),
  agent: z.object({ id: z.string(), name: z.string() }).optional(),
});

/** Owner: management. The full stored definition of an agent (the FullAgent shape), for evals and improvements. */
export const GetAgentDefinitionRequest = LookupAgentRequest;
/** Reply: the FullAgent (`FullAgent` in manage/agents), or a 404 problem when the agent does not exist. */
export { FullAgent as GetAgentDefinitionReply } from '../manage/agents';

/**
 * Owner: management. The full definitions of a project's agents, ordered by agent id, one page at a time (evals copies
 * them onto an improvement branch). `after` is the last agent id of the previous page. Reply body:
 * `ListAgentDefinitionsReply` (`next` is the `after` of the next page, null on the last one).
 */
export const ListAgentDefinitionsRequest = z.object({
  tenantId: z.string(),
  projectId: z.string(),
  after: z.string().optional(),
  limit: z.number().int().min(1).max(100).default(50),
});
export const ListAgentDefinitionsReply = z.object({ agents: z.array(FullAgent), next: z.string().nullable() });

/** Owner: management. An app with its auth configuration, for run-auth and the credential gateway. */
export const GetAppForAuthRequest = z.object({ appId: z.string() });
/** Reply body: `{app}`; `app` is null when no such app exists. Disabled apps are returned (with `enabled: false`). */
export const AppForAuth = z.object({
  id: z.string(),
  /** Grows with every change; a reader that saw a newer revision announced ignores an older read. */
  revision: z.number().int(),
  tenantId: z.string(),
  projectId: z.string(),
  enabled: z.boolean(),
  type: z.enum(['web_client', 'api', 'support_copilot']),
  defaultAgentId: z.string().nullable(),
  defaultProjectId: z.string().nullable(),
  config: z.object({
    type: z.string(),
    webClient: z
      .object({ allowAnonymous: z.boolean(), allowedDomains: z.array(z.string()), audience: z.string().nullable() })
      .optional(),
    supportCopilot: z.object({ audience: z.string().nullable() }).optional(),
  }),
  publicKeys: z.array(z.object({ kid: z.string(), algorithm: z.string(), publicKey: z.string(), addedAt: z.string() })),
});
export type AppForAuth = z.infer<typeof AppForAuth>;
export const GetAppForAuthReply = z.object({ app: AppForAuth.nullable() });

/**
 * Payload of the `appChanged` notice (core NATS, not stored), published by management after an app was created, changed
 * (keys included) or deleted: `{appId, revision, app}` with the new state (`app` null once deleted). Every process that caches apps (run-auth, the
 * credential gateway) replaces its copy at once and ignores reads older than `revision`.
 * The durable record of the change is the `app.created` / `app.updated` / `app.deleted` event.
 */
export const AppChanged = z.object({ appId: z.string(), revision: z.number().int(), app: AppForAuth.nullable() });
export type AppChanged = z.infer<typeof AppChanged>;

/** Payload of the `appUsed` notice, published by run-auth (at most once a minute per app and process) when an app authenticated a request: `{appId, at}`. Management records `lastUsedAt`. */
export const AppUsed = z.object({ appId: z.string(), at: z.string() });

/** Owner: chatapp. Post a message to a channel of an installed workspace (webhook destinations with `chatappChannelId`). */
export const PostChannelMessageRequest = z.object({
  tenantId: z.string(),
  projectId: z.string(),
  channelId: z.string(),
  text: z.string(),
  /** Optional structured payload (for example the webhook envelope) the chat message may render. */
  payload: z.unknown().optional(),
});
export const PostChannelMessageReply = z.object({
  ok: z.boolean(),
  messageTs: z.string().optional(),
  error: z.string().optional(),
});

/**
 * Owner: run-auth. Verifies a credential presented as the subject token of a token exchange (credential gateway) for one app:
 * an API key (apps of type `api`: the key's project must be the app's), an app JWT signed with one of the app's keys, or an
 * anonymous session token of the app. No Origin check (the token is the proof; the exchange is not a browser page call).
 * Reply body: `VerifySubjectTokenReply`; failures are data (`result`), not problems.
 */
export const VerifySubjectTokenRequest = z.object({ token: z.string().min(1), appId: z.string().min(1) });
export type VerifySubjectTokenRequest = z.infer<typeof VerifySubjectTokenRequest>;
export const VerifySubjectTokenReply = z.discriminatedUnion('result', [
  z.object({
    result: z.literal('ok'),
    appId: z.string(),
    appType: z.enum(['web_client', 'api', 'support_copilot']),
    tenantId: z.string(),
    projectId: z.string(),
    /** The subject: the JWT's `sub`, or `api_key:<id>` for an API key. */
    subject: z.string(),
    /** A `serverMetadata.authMethod` value (AUTH_METHODS). */
    authMethod: z.string(),
    /** When the subject token expires (ISO 8601), null when it does not. */
    expiresAt: z.string().nullable(),
  }),
  /** No such app, or it is disabled. */
  z.object({ result: z.literal('unknown_app') }),
  /** The token is not a valid, unexpired credential of this app; `reason` is safe to show to the caller. */
  z.object({ result: z.literal('invalid'), reason: z.string() }),
]);
export type VerifySubjectTokenReply = z.infer<typeof VerifySubjectTokenReply>;
/** Owner: events-ingest. The recorded run events of one conversation, oldest first (at most `limit`). Used by evals. */
export const ListConversationEventsRequest = z.object({
  tenantId: z.string(),
  projectId: z.string(),
  conversationId: z.string(),
  limit: z.number().int().min(1).max(1000).default(500),
});
/** Reply body: `{events}` (RunEvent records; empty when the conversation has none). */
export { RunEvent as ConversationEvent } from '../run/events';
export const ListConversationEventsReply = z.object({ events: z.array(RunEvent) });

/**
 * Owner: management. Replaces the stored definition of an existing agent with a whole new one (evals, when an
 * improvement branch is merged) and emits `agent.updated` (`change.kind: 'definition'`) through management's outbox.
 * `expectedUpdatedAt` is the `updatedAt` the caller based its change on: when the agent changed since, the reply is
 * a 409 problem. Validation failures are 422 problems, an unknown agent a 404.
 * `changeId` makes the call idempotent: when the agent's latest revision was written by a call with the same
 * `changeId`, the reply is that revision (200, nothing written, no second event), so a caller may retry after a crash.
 * `dryRun` checks everything (existence, `expectedUpdatedAt`, validity) and writes nothing.
 * Reply body: the new FullAgent (the current one for a dry run).
 */
export const ReplaceAgentDefinitionRequest = z.object({
  tenantId: z.string(),
  projectId: z.string(),
  agentId: z.string(),
  expectedUpdatedAt: z.string().optional(),
  definition: z.unknown(),
  changeId: z.string().min(1).max(500).optional(),
  dryRun: z.boolean().optional(),
  /** The improvement branch being merged (carried in the event's `change.branchName`). */
  branchName: z.string().max(400).optional(),
});
export const ReplaceAgentDefinitionReply = FullAgent;
