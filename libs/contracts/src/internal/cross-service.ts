import { z } from 'zod';

/**
 * Internal request subjects between services (NATS only, never exposed over HTTP). Each is served by the
 * named owner with `bus.serve(subject, …)` (queue group = owner) and called with `bus.requestWire(subject, {principal: {kind:'anonymous'}, body})`.
 * The reply body is the schema named beside it.
 */

/** Owner: management. Does an agent exist in a project? Used by chatapp (channel agent configs) and evals. */
export const LOOKUP_AGENT_SUBJECT = 'svc.management.agents.lookup';
export const LookupAgentRequest = z.object({ tenantId: z.string(), projectId: z.string(), agentId: z.string() });
export const LookupAgentReply = z.object({ exists: z.boolean(), agent: z.object({ id: z.string(), name: z.string() }).optional() });

/** Owner: management. The full stored definition of an agent (the FullAgent shape), for evals and improvements. */
export const GET_AGENT_DEFINITION_SUBJECT = 'svc.management.agents.definition';
export const GetAgentDefinitionRequest = LookupAgentRequest;
/** Reply: the FullAgent (`FullAgent` in manage/agents), or a 404 problem when the agent does not exist. */
export { FullAgent as GetAgentDefinitionReply } from '../manage/agents';

/** Owner: management. An app with its auth configuration, for run-auth and the credential gateway. */
export const GET_APP_FOR_AUTH_SUBJECT = 'svc.management.apps.for-auth';
export const GetAppForAuthRequest = z.object({ appId: z.string() });

/** Owner: chatapp. Post a message to a channel of an installed workspace (webhook destinations with `chatappChannelId`). */
export const POST_CHANNEL_MESSAGE_SUBJECT = 'svc.chatapp.channel-messages.post';
export const PostChannelMessageRequest = z.object({
  tenantId: z.string(),
  projectId: z.string(),
  channelId: z.string(),
  text: z.string(),
  /** Optional structured payload (for example the webhook envelope) the chat message may render. */
  payload: z.unknown().optional(),
});
export const PostChannelMessageReply = z.object({ ok: z.boolean(), messageTs: z.string().optional(), error: z.string().optional() });
