import type { z } from 'zod';
import { BACKEND_SERVICES, camelName, type BackendServiceName, type ServiceName } from '../services';
import { AuthenticateRunReply, AuthenticateRunRequest } from '../run/auth';
import {
  ResolveManageCredential,
  ResolveManageCredentialReply,
  VerifyPlaygroundTokenReply,
  VerifyPlaygroundTokenRequest,
} from '../manage/auth';
import { VerifyApiKeyReply, VerifyApiKeyRequest } from '../manage/api-keys';
import { VerifyAnalyticsKeyReply, VerifyAnalyticsKeyRequest } from '../analytics/keys';
import {
  DisableDestinationForDeliveryReply,
  DisableDestinationForDeliveryRequest,
  ListDestinationsForDispatchReply,
  ListDestinationsForDispatchRequest,
} from '../manage/webhook-destinations';
import { CompleteLinkSessionReply, CompleteLinkSessionRequest } from '../work-apps/chatapp';
import {
  GetAgentDefinitionReply,
  GetAgentDefinitionRequest,
  GetAppForAuthReply,
  GetAppForAuthRequest,
  ListAgentDefinitionsReply,
  ListAgentDefinitionsRequest,
  ListConversationEventsReply,
  ListConversationEventsRequest,
  LookupAgentReply,
  LookupAgentRequest,
  PostChannelMessageReply,
  PostChannelMessageRequest,
  ReplaceAgentDefinitionReply,
  ReplaceAgentDefinitionRequest,
  VerifySubjectTokenReply,
  VerifySubjectTokenRequest,
} from './cross-service';
import { HealthRequest, ServiceHealth, healthSubject } from './system';
import { Feedback } from '../manage/feedback';
import { PROJECT_ERASURE_SERVICES, ReportErasureReply, ReportErasureRequest } from '../manage/erasures';
import { z as zod } from 'zod';

/**
 * A call from one service to another over NATS request/reply, declared like a public operation (STYLE.md §1): the
 * owner serves it with `bus.serveInternal(def, handler)` (queue group = owner), a caller sends it with
 * `bus.callInternal(def, request)`, and the bus's permissions are generated from `owner` and `callers`.
 * On the wire a request is `{ body, principal: { kind: 'anonymous' } }` and a success reply has status 200.
 */
export interface InternalCallDef<Q extends z.ZodType = z.ZodType, R extends z.ZodType = z.ZodType> {
  /** camelCase, e.g. `lookupAgent`. */
  name: string;
  /** `svc.<owner>.<resource>.<action>`. */
  subject: string;
  /** The service that serves it (queue group = owner). */
  owner: ServiceName;
  /** The only services that may call it (`gateway` included where the gateway calls it). */
  callers: readonly ServiceName[];
  /** The request body. */
  request: Q;
  /** The reply body. */
  reply: R;
  description: string;
  /** Safe to send again after a timeout (lookups); default false. */
  repeatable?: boolean;
  /** Its request carries a credential (API key, bearer token, session token). */
  carriesSecret?: boolean;
}

export function internalCall<Q extends z.ZodType, R extends z.ZodType>(
  def: InternalCallDef<Q, R>,
): InternalCallDef<Q, R> {
  if (!/^[a-z][A-Za-z0-9]*$/.test(def.name)) throw new Error(`internal call name ${def.name} is not camelCase`);
  if (!def.subject.startsWith(`svc.${def.owner}.`))
    throw new Error(`internal call ${def.name}: subject ${def.subject} is not svc.${def.owner}.…`);
  return def;
}

// ---------------------------------------------------------------- management

export const resolveManageCredential = internalCall({
  name: 'resolveManageCredential',
  subject: 'svc.management.auth.resolve',
  owner: 'management',
  callers: ['gateway'],
  request: ResolveManageCredential,
  reply: ResolveManageCredentialReply,
  description:
    'The gateway resolves a management bearer token or a session id to a principal (null when it is not valid).',
  repeatable: true,
  carriesSecret: true,
});

export const verifyApiKey = internalCall({
  name: 'verifyApiKey',
  subject: 'svc.management.api-keys.verify',
  owner: 'management',
  callers: ['run-auth'],
  request: VerifyApiKeyRequest,
  reply: VerifyApiKeyReply,
  description:
    'Resolves a run-API key to its scope (tenant, project, agent, expiry); null when it is invalid, expired or revoked.',
  repeatable: true,
  carriesSecret: true,
});

export const verifyPlaygroundToken = internalCall({
  name: 'verifyPlaygroundToken',
  subject: 'svc.management.playground.verify',
  owner: 'management',
  callers: ['run-auth'],
  request: VerifyPlaygroundTokenRequest,
  reply: VerifyPlaygroundTokenReply,
  description: 'Whether a run-API bearer token is a playground token management issued; its claims, or null.',
  repeatable: true,
  carriesSecret: true,
});

export const getAppForAuth = internalCall({
  name: 'getAppForAuth',
  subject: 'svc.management.apps.for-auth',
  owner: 'management',
  callers: ['run-auth'],
  request: GetAppForAuthRequest,
  reply: GetAppForAuthReply,
  description:
    'An app with its auth configuration and public keys (`{app}`, null when there is no such app; disabled apps are returned).',
  repeatable: true,
});

export const lookupAgent = internalCall({
  name: 'lookupAgent',
  subject: 'svc.management.agents.lookup',
  owner: 'management',
  callers: ['chatapp'],
  request: LookupAgentRequest,
  reply: LookupAgentReply,
  description:
    'Does an agent exist in a project (chatapp channel agent configs)? Ids that could never be stored are simply unknown.',
  repeatable: true,
});

export const getAgentDefinition = internalCall({
  name: 'getAgentDefinition',
  subject: 'svc.management.agents.definition',
  owner: 'management',
  callers: ['evals'],
  request: GetAgentDefinitionRequest,
  reply: GetAgentDefinitionReply,
  description: 'The full stored definition of an agent (FullAgent), or a 404 problem.',
  repeatable: true,
});

export const listAgentDefinitions = internalCall({
  name: 'listAgentDefinitions',
  subject: 'svc.management.agents.definitions.list',
  owner: 'management',
  callers: ['evals'],
  request: ListAgentDefinitionsRequest,
  reply: ListAgentDefinitionsReply,
  description:
    "The full definitions of a project's agents, ordered by agent id, a page at a time (`next` is the `after` of the next page, null on the last).",
  repeatable: true,
});

export const replaceAgentDefinition = internalCall({
  name: 'replaceAgentDefinition',
  subject: 'svc.management.agents.replace-definition',
  owner: 'management',
  callers: ['evals'],
  request: ReplaceAgentDefinitionRequest,
  reply: ReplaceAgentDefinitionReply,
  description:
    'Replaces the definition of an existing agent (an improvement branch is merged) and emits agent.updated. 409 when it changed since `expectedUpdatedAt`; a repeat with the same `changeId` answers the revision it wrote.',
});

export const listDestinationsForDispatch = internalCall({
  name: 'listDestinationsForDispatch',
  subject: 'svc.management.webhook-destinations.for-dispatch',
  owner: 'management',
  callers: ['webhook-dispatcher'],
  request: ListDestinationsForDispatchRequest,
  reply: ListDestinationsForDispatchReply,
  description: 'Every webhook destination of a project with its sealed signing secrets, for the dispatcher.',
  repeatable: true,
});

export const disableDestinationForDelivery = internalCall({
  name: 'disableDestinationForDelivery',
  subject: 'svc.management.webhook-destinations.disable-for-delivery',
  owner: 'management',
  callers: ['webhook-dispatcher'],
  request: DisableDestinationForDeliveryRequest,
  reply: DisableDestinationForDeliveryReply,
  description:
    'The dispatcher turns a destination off (410 Gone, or failing for days) with the reason users see; emits webhook-destination.updated.',
});

export const reportErasure = internalCall({
  name: 'reportErasure',
  subject: 'svc.management.erasures.report',
  owner: 'management',
  callers: PROJECT_ERASURE_SERVICES.filter((s) => s !== 'management'),
  request: ReportErasureRequest,
  reply: ReportErasureReply,
  description:
    'A service has erased its part of an erasure job (ERASURE stream); the job is done once every service has. Repeating it changes nothing.',
  repeatable: true,
});

// ---------------------------------------------------------------- run-auth

export const authenticateRun = internalCall({
  name: 'authenticateRun',
  subject: 'svc.run-auth.authenticate',
  owner: 'run-auth',
  callers: ['gateway'],
  request: AuthenticateRunRequest,
  reply: AuthenticateRunReply,
  description:
    'The gateway asks who a run-API request is (API key, app JWT, anonymous session or playground token): `{principal}`, or a 401/403 problem.',
  repeatable: true,
  carriesSecret: true,
});

export const verifySubjectToken = internalCall({
  name: 'verifySubjectToken',
  subject: 'svc.run-auth.subject-tokens.verify',
  owner: 'run-auth',
  callers: ['credential-gateway'],
  request: VerifySubjectTokenRequest,
  reply: VerifySubjectTokenReply,
  description:
    'Whether the subject token of a token exchange is a valid credential of an app; failures are data (`result`), not problems.',
  repeatable: true,
  carriesSecret: true,
});

// ---------------------------------------------------------------- analytics

export const verifyAnalyticsKey = internalCall({
  name: 'verifyAnalyticsKey',
  subject: 'svc.analytics.analytics-keys.verify',
  owner: 'analytics',
  callers: ['gateway'],
  request: VerifyAnalyticsKeyRequest,
  reply: VerifyAnalyticsKeyReply,
  description:
    "The gateway's analytics listener verifies a presented analytics key: `{principal}` (kind analytics), or a 401 problem.",
  repeatable: true,
  carriesSecret: true,
});

const FeedbackScope = zod.object({ tenantId: zod.string(), projectId: zod.string() });
const FeedbackList = zod.object({ feedback: zod.array(Feedback) });

export const listConversationFeedback = internalCall({
  name: 'listConversationFeedback',
  subject: 'svc.management.feedback.for-conversation',
  owner: 'management',
  callers: ['evals'],
  request: FeedbackScope.extend({
    conversationId: zod.string().min(1),
    limit: zod.number().int().min(1).max(100).default(100),
  }),
  reply: FeedbackList,
  description: 'The feedback recorded on one conversation (newest first, at most `limit`), for evaluations.',
  repeatable: true,
});

export const getFeedbackByIds = internalCall({
  name: 'getFeedbackByIds',
  subject: 'svc.management.feedback.by-ids',
  owner: 'management',
  callers: ['evals'],
  request: FeedbackScope.extend({ ids: zod.array(zod.string().min(1)).max(100) }),
  reply: FeedbackList,
  description:
    'The feedback records of a project with these ids (unknown ids are left out), for dataset items made from feedback.',
  repeatable: true,
});

// ---------------------------------------------------------------- events-ingest

export const listConversationEvents = internalCall({
  name: 'listConversationEvents',
  subject: 'svc.events-ingest.conversations.events',
  owner: 'events-ingest',
  callers: ['evals'],
  request: ListConversationEventsRequest,
  reply: ListConversationEventsReply,
  description: 'The recorded run events of one conversation, oldest first (at most `limit`).',
  repeatable: true,
});

// ---------------------------------------------------------------- chatapp

export const postChannelMessage = internalCall({
  name: 'postChannelMessage',
  subject: 'svc.chatapp.channel-messages.post',
  owner: 'chatapp',
  callers: ['webhook-dispatcher'],
  request: PostChannelMessageRequest,
  reply: PostChannelMessageReply,
  description: 'Posts a message to a channel of an installed workspace (webhook destinations with `chatappChannelId`).',
});

export const completeLinkSession = internalCall({
  name: 'completeLinkSession',
  subject: 'svc.chatapp.link-sessions.complete',
  owner: 'chatapp',
  // The bot side of the chat product is no service of this repository yet: the local launcher and tests play it.
  callers: [],
  request: CompleteLinkSessionRequest,
  reply: CompleteLinkSessionReply,
  description:
    'The bot side completes a link session that users/connect started, once the chat user gave the bot its session token.',
  carriesSecret: true,
});

// ---------------------------------------------------------------- health (every service)

const health = (owner: BackendServiceName) =>
  internalCall({
    name: `${camelName(owner)}Health`,
    subject: healthSubject(owner),
    owner,
    callers: ['gateway'],
    request: HealthRequest,
    reply: ServiceHealth,
    description: `Readiness of one ${owner} replica (its dependencies answer).`,
    repeatable: true,
  });

/** One per service behind the gateway (libs/contracts/src/services.ts): `managementHealth`, `runAuthHealth`, … */
export const healthCalls = Object.fromEntries(BACKEND_SERVICES.map((s) => [s, health(s)])) as Record<
  BackendServiceName,
  ReturnType<typeof health>
>;

/** The health call a service serves (the gateway serves none). */
export function healthCallOf(service: ServiceName): InternalCallDef<typeof HealthRequest, typeof ServiceHealth> {
  if (service === 'gateway') throw new Error('the gateway serves no health call');
  return healthCalls[service];
}

/** Every internal call. */
export const internalCalls: readonly InternalCallDef[] = [
  resolveManageCredential,
  verifyApiKey,
  verifyPlaygroundToken,
  getAppForAuth,
  lookupAgent,
  getAgentDefinition,
  listAgentDefinitions,
  replaceAgentDefinition,
  listDestinationsForDispatch,
  disableDestinationForDelivery,
  reportErasure,
  authenticateRun,
  verifySubjectToken,
  verifyAnalyticsKey,
  listConversationFeedback,
  getFeedbackByIds,
  listConversationEvents,
  postChannelMessage,
  completeLinkSession,
  ...Object.values(healthCalls),
];

{
  const seen = new Set<string>();
  for (const c of internalCalls) {
    if (seen.has(c.name) || seen.has(c.subject)) throw new Error(`duplicate internal call ${c.name} / ${c.subject}`);
    seen.add(c.name);
    seen.add(c.subject);
  }
}
