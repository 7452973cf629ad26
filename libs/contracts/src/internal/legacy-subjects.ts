import { authenticateRun, completeLinkSession, disableDestinationForDelivery, getAgentDefinition, getAppForAuth, listAgentDefinitions, listConversationEvents, listDestinationsForDispatch, lookupAgent, postChannelMessage, replaceAgentDefinition, resolveManageCredential, verifyAnalyticsKey, verifyApiKey, verifySubjectToken } from './calls';
import { appChanged, appUsed, credentialRevoked, signingKeysChanged, webhookDestinationsChanged } from './notices';

/** The subject constants of before the declarations, until every call site uses those (then this file goes). */
export const LOOKUP_AGENT_SUBJECT = lookupAgent.subject;
export const GET_AGENT_DEFINITION_SUBJECT = getAgentDefinition.subject;
export const LIST_AGENT_DEFINITIONS_SUBJECT = listAgentDefinitions.subject;
export const GET_APP_FOR_AUTH_SUBJECT = getAppForAuth.subject;
export const APP_CHANGED_SUBJECT = appChanged.subject;
export const APP_USED_SUBJECT = appUsed.subject;
export const POST_CHANNEL_MESSAGE_SUBJECT = postChannelMessage.subject;
export const VERIFY_SUBJECT_TOKEN_SUBJECT = verifySubjectToken.subject;
export const LIST_CONVERSATION_EVENTS_SUBJECT = listConversationEvents.subject;
export const REPLACE_AGENT_DEFINITION_SUBJECT = replaceAgentDefinition.subject;
export const RESOLVE_MANAGE_CREDENTIAL_SUBJECT = resolveManageCredential.subject;
export const CREDENTIAL_REVOKED_SUBJECT = credentialRevoked.subject;
export const AUTHENTICATE_RUN_SUBJECT = authenticateRun.subject;
export const VERIFY_API_KEY_SUBJECT = verifyApiKey.subject;
export const VERIFY_ANALYTICS_KEY_SUBJECT = verifyAnalyticsKey.subject;
export const LIST_DESTINATIONS_FOR_DISPATCH_SUBJECT = listDestinationsForDispatch.subject;
export const DISABLE_DESTINATION_FOR_DELIVERY_SUBJECT = disableDestinationForDelivery.subject;
export const DESTINATIONS_CHANGED_SUBJECT = webhookDestinationsChanged.subject;
export const SIGNING_KEYS_CHANGED_SUBJECT = signingKeysChanged.subject;
export const COMPLETE_LINK_SESSION_SUBJECT = completeLinkSession.subject;
export const REPEATABLE_SUBJECTS: ReadonlySet<string> = new Set([resolveManageCredential.subject, authenticateRun.subject, verifyAnalyticsKey.subject]);
