import { z } from 'zod';
import { operation } from '../operation';
import { ProjectId, Rid, SuccessReply, TenantId } from '../common';

/**
 * Chat-app integration (`/work-apps/chatapp`): install, OAuth redirect, links between chat users and platform
 * users, workspaces and the channel → agent settings. Owner: the `chatapp` service. Field names with `chatapp`
 * replace the chat product's brand in the wire name.
 */

const base = '/work-apps/chatapp';
const tags = ['Chat-app'];
/** The problems a chat-app operation answers (503: the chat-app integration is not configured). */
const chatappErrors = [400, 401, 403, 503];
/** …and one on a workspace, channel or user link (404: none such for the caller's tenant). */
const recordErrors = [400, 401, 403, 404, 503];
/** …and one that calls the chat product (502: the chat product's API failed). */
const chatProductErrors = [400, 401, 403, 404, 502, 503];

/** A chat workspace (team) id. */
export const TeamId = z
  .string()
  .max(64)
  .regex(/^T[A-Z0-9]+$/, 'must match ^T[A-Z0-9]+$');
/** A chat channel id (uppercase letters and digits, as the chat product issues them). */
export const ChatChannelId = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[A-Z0-9]+$/, 'must be a chat channel id (uppercase letters and digits)');
export const ChatUserId = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[A-Z0-9]+$/, 'must be a chat user id (uppercase letters and digits)');

export const TeamPath = z.object({ teamId: TeamId });
export const ChannelPath = TeamPath.extend({ channelId: ChatChannelId });

/** Which agent answers in a channel (or by default in a workspace). */
export const AgentConfig = z.object({ agentId: z.string(), grantAccessToMembers: z.boolean(), projectId: z.string() });
export type AgentConfig = z.infer<typeof AgentConfig>;
export const AgentConfigInput = z.strictObject({
  agentId: Rid,
  projectId: ProjectId,
  grantAccessToMembers: z.boolean().default(false),
});
export type AgentConfigInput = z.infer<typeof AgentConfigInput>;

export const ChatWorkspaceSummary = z.object({
  connectionId: z.string(),
  defaultAgentName: z.string().nullable(),
  hasDefaultAgent: z.boolean(),
  teamDomain: z.string().nullable(),
  teamId: z.string(),
  teamName: z.string(),
  tenantId: z.string(),
});
export type ChatWorkspaceSummary = z.infer<typeof ChatWorkspaceSummary>;

export const ChatWorkspace = z.object({
  connectionId: z.string(),
  defaultAgent: AgentConfig.nullable(),
  teamId: z.string(),
  teamName: z.string(),
  tenantId: z.string(),
});
export type ChatWorkspace = z.infer<typeof ChatWorkspace>;

export const ChatChannel = z.object({
  id: z.string(),
  name: z.string(),
  isPrivate: z.boolean(),
  isShared: z.boolean(),
  memberCount: z.number().int(),
  hasAgentConfig: z.boolean(),
  agentConfig: AgentConfig.nullable(),
});
export type ChatChannel = z.infer<typeof ChatChannel>;

export const ChatLinkedUser = z.object({
  id: z.string(),
  lastUsedAt: z.string().nullable(),
  linkedAt: z.string(),
  chatappEmail: z.string().nullable(),
  chatappTeamId: z.string(),
  chatappUserId: z.string(),
  chatappUsername: z.string().nullable(),
  userId: z.string(),
});
export type ChatLinkedUser = z.infer<typeof ChatLinkedUser>;

export const ChatConnection = z.object({
  appUserEmail: z.string().nullable(),
  appUserId: z.string(),
  connectionId: z.string(),
  linkedAt: z.string(),
  chatappDisplayName: z.string().nullable(),
  chatappTeamId: z.string(),
  chatappUserId: z.string(),
  tenantId: z.string(),
});
export type ChatConnection = z.infer<typeof ChatConnection>;

// ---------------------------------------------------------------- install and OAuth (no credential)

export const InstallQuery = z.object({
  link: z
    .string()
    .max(4096)
    .optional()
    .describe('The install link token minted by `chatappCreateInstallLink` (required)'),
  tenant_id: TenantId.optional(),
  project_id: ProjectId.optional(),
  include_webhook: z.string().max(16).optional(),
});

export const InstallLinkCreate = z.strictObject({
  tenantId: TenantId.optional().describe(
    'The tenant the workspace is bound to (a tenant credential: its own; the admin: default `default`)',
  ),
  projectId: ProjectId.optional(),
  includeWebhook: z.boolean().optional(),
});

export const chatappCreateInstallLink = operation({
  operationId: 'chatappCreateInstallLink',
  summary: "Mint an install link that binds a chat workspace to the caller's tenant",
  description:
    'Answers `url`, the public install route with a signed `link` token that names the tenant and project. It expires after 10 minutes and starts one installation. Without such a link the install route refuses to bind a workspace.',
  tags,
  method: 'post',
  path: `${base}/install-links`,
  service: 'chatapp',
  subject: 'svc.chatapp.install-links.create',
  auth: 'manage',
  permission: 'edit',
  body: InstallLinkCreate,
  reply: { status: 201, body: z.object({ data: z.object({ url: z.string(), expiresAt: z.string() }) }) },
  errors: chatappErrors,
  addition: true,
});

export const chatappInstall = operation({
  operationId: 'chatappInstall',
  summary: 'Start installing the chat app into a workspace (redirects to the chat product)',
  description:
    "Needs `link`, an install link token minted by an authenticated `POST /work-apps/chatapp/install-links` (signed, 10 minutes, single use): the installation is bound to the tenant and project it names (a `tenant_id` that differs is refused). With a valid link: 302 with `Location` set to the chat product's authorize URL; the `state` parameter is signed (HMAC-SHA-256), expires after 10 minutes and can be used once. `include_webhook=true` (or the link's `includeWebhook`) adds the `incoming-webhook` scope. Without a valid link: 302 to the result page with `?error=install_not_authorized&reason=missing|malformed|bad_signature|expired|replayed|tenant_mismatch`.",
  tags,
  method: 'get',
  path: `${base}/install`,
  service: 'chatapp',
  subject: 'svc.chatapp.install.start',
  auth: 'none',
  query: InstallQuery,
  reply: { status: 302, description: "Redirect to the chat product's authorize page" },
  errors: [400, 503],
});

/** The callback takes whatever the chat product sends: every outcome is a redirect to the result page. */
export const OAuthRedirectQuery = z.object({
  code: z.string().max(2048).optional(),
  error: z.string().max(256).optional(),
  state: z.string().max(4096).optional(),
});

export const chatappOAuthRedirect = operation({
  operationId: 'chatappOAuthRedirect',
  // Not safe to repeat: the state it consumes can be used once.
  repeat: 'never',
  summary: 'OAuth redirect callback from the chat product',
  description:
    "Verifies `state`, exchanges `code` (oauth.v2.access), stores the installation and answers 302 to the result page with `?success=true&workspace=<team name>&teamId=…&tenant_id=…`, or with `?error=<code>` (`invalid_state` with `reason` `missing|malformed|bad_signature|expired|replayed`, `no_code`, `oauth_failed` with `reason` = the chat product's error, `workspace_already_installed`, or the chat product's own `error`, e.g. `access_denied`).",
  tags,
  method: 'get',
  path: `${base}/oauth_redirect`,
  service: 'chatapp',
  subject: 'svc.chatapp.install.callback',
  auth: 'none',
  query: OAuthRedirectQuery,
  reply: { status: 302, description: 'Redirect to the result page' },
  errors: [503],
});

// ---------------------------------------------------------------- users

const TenantIdOptional = TenantId.optional();
const UserId = z.string().min(1).max(256);

export const chatappConnectUser = operation({
  operationId: 'chatappConnectUser',
  summary: 'Start linking a platform user to a chat user (creates a link session)',
  description:
    "Creates a one-time link session (10 minutes) for the platform user. `sessionToken` is the code the chat user gives the app's bot; `connectUrl` opens the chat product's conversation with the bot carrying it. The bot side completes the session over the internal subject `svc.chatapp.link-sessions.complete`.",
  tags,
  method: 'post',
  path: `${base}/users/connect`,
  service: 'chatapp',
  subject: 'svc.chatapp.users.connect',
  auth: 'manage',
  permission: 'use',
  body: z.strictObject({
    userId: UserId,
    tenantId: TenantIdOptional,
    userEmail: z.email().optional(),
    userName: z.string().min(1).max(256).optional(),
  }),
  reply: { status: 200, body: z.object({ connectUrl: z.string(), sessionToken: z.string() }) },
  errors: chatappErrors,
});

export const chatappDisconnectUser = operation({
  operationId: 'chatappDisconnectUser',
  summary: 'Remove the link between a chat user and a platform user',
  description:
    'Give `chatappTeamId` with `chatappUserId` (one chat user), or `userId` (every link of that platform user).',
  tags,
  method: 'post',
  path: `${base}/users/disconnect`,
  service: 'chatapp',
  subject: 'svc.chatapp.users.disconnect',
  auth: 'manage',
  permission: 'use',
  body: z
    .strictObject({
      chatappTeamId: TeamId.optional(),
      chatappUserId: ChatUserId.optional(),
      tenantId: TenantIdOptional,
      userId: UserId.optional(),
    })
    .refine((b) => (b.chatappTeamId !== undefined) === (b.chatappUserId !== undefined), {
      message: 'give chatappTeamId and chatappUserId together',
      path: ['chatappUserId'],
    })
    .refine((b) => b.chatappUserId !== undefined || b.userId !== undefined, {
      message: 'give chatappTeamId with chatappUserId, or userId',
      path: ['userId'],
    }),
  reply: { status: 200, body: SuccessReply },
  errors: recordErrors,
});

export const chatappLinkStatus = operation({
  operationId: 'chatappLinkStatus',
  summary: 'Is a chat user linked to a platform user?',
  tags,
  method: 'get',
  path: `${base}/users/link-status`,
  service: 'chatapp',
  subject: 'svc.chatapp.users.link-status',
  auth: 'manage',
  permission: 'view',
  query: z.object({ chatappUserId: ChatUserId, chatappTeamId: TeamId, tenantId: TenantIdOptional }),
  reply: {
    status: 200,
    body: z.object({
      linkId: z.string().nullable(),
      linked: z.boolean(),
      linkedAt: z.string().nullable(),
      chatappUsername: z.string().nullable(),
    }),
  },
  errors: chatappErrors,
});

export const chatappVerifyLinkToken = operation({
  operationId: 'chatappVerifyLinkToken',
  summary: 'Complete a link: a platform user presents a link token the chat app issued',
  tags,
  method: 'post',
  path: `${base}/users/link/verify-token`,
  service: 'chatapp',
  subject: 'svc.chatapp.users.verify-token',
  auth: 'manage',
  permission: 'use',
  body: z.strictObject({ token: z.string().min(1).max(4096), userId: UserId, userEmail: z.email().optional() }),
  reply: {
    status: 200,
    body: z.object({
      linkId: z.string(),
      chatappTeamId: z.string(),
      chatappUsername: z.string().nullable(),
      success: z.boolean(),
      tenantId: z.string(),
    }),
  },
  errors: [400, 401, 403, 404, 410, 409, 503],
});

export const chatappUserStatus = operation({
  operationId: 'chatappUserStatus',
  summary: 'Is a platform user connected to a chat user?',
  tags,
  method: 'get',
  path: `${base}/users/status`,
  service: 'chatapp',
  subject: 'svc.chatapp.users.status',
  auth: 'manage',
  permission: 'view',
  query: z.object({ userId: UserId, tenantId: TenantIdOptional }),
  reply: { status: 200, body: z.object({ connected: z.boolean(), connection: ChatConnection.nullable() }) },
  errors: chatappErrors,
});

export const ChatLinkTokenCreate = z.strictObject({
  chatappUserId: ChatUserId,
  chatappUsername: z.string().min(1).max(256).optional(),
  chatappEmail: z.email().optional(),
  /** Also send the link to the chat user as a direct message from the bot. */
  sendDm: z.boolean().default(false),
});

export const chatappCreateLinkToken = operation({
  operationId: 'chatappCreateLinkToken',
  summary: 'Issue a link token for a chat user of a workspace (what the bot sends a user who asks to link)',
  description:
    "An addition. Issues the one-time, 10-minute link token that `users/link/verify-token` accepts, and the link page URL carrying it; with `sendDm` the bot also sends the link to the chat user. Needs the admin role of the workspace's tenant.",
  tags,
  method: 'post',
  path: `${base}/workspaces/{teamId}/link-tokens`,
  service: 'chatapp',
  subject: 'svc.chatapp.link-tokens.create',
  auth: 'manage',
  permission: 'edit',
  params: TeamPath,
  body: ChatLinkTokenCreate,
  reply: {
    status: 201,
    body: z.object({ token: z.string(), linkUrl: z.string(), expiresAt: z.string(), messageTs: z.string().nullable() }),
  },
  errors: chatProductErrors,
  addition: true,
});

// ---------------------------------------------------------------- workspaces

export const chatappListWorkspaces = operation({
  operationId: 'chatappListWorkspaces',
  summary: 'List installed chat workspaces',
  description:
    "A tenant credential lists its tenant's workspaces; the platform admin lists every tenant's, or one tenant's with `tenantId`.",
  tags,
  method: 'get',
  path: `${base}/workspaces`,
  service: 'chatapp',
  subject: 'svc.chatapp.workspaces.list',
  auth: 'manage',
  permission: 'view',
  query: z.object({ tenantId: TenantIdOptional }),
  reply: { status: 200, body: z.object({ workspaces: z.array(ChatWorkspaceSummary) }) },
  errors: chatappErrors,
});

export const chatappGetWorkspace = operation({
  operationId: 'chatappGetWorkspace',
  summary: 'Get an installed workspace',
  tags,
  method: 'get',
  path: `${base}/workspaces/{teamId}`,
  service: 'chatapp',
  subject: 'svc.chatapp.workspaces.get',
  auth: 'manage',
  permission: 'view',
  params: TeamPath,
  reply: { status: 200, body: ChatWorkspace },
  errors: recordErrors,
});

export const chatappUninstallWorkspace = operation({
  operationId: 'chatappUninstallWorkspace',
  summary: 'Uninstall a workspace (revokes the bot token, removes channel settings and user links)',
  tags,
  method: 'delete',
  path: `${base}/workspaces/{teamId}`,
  service: 'chatapp',
  subject: 'svc.chatapp.workspaces.uninstall',
  auth: 'manage',
  permission: 'edit',
  params: TeamPath,
  reply: { status: 200, body: SuccessReply },
  errors: chatProductErrors,
});

export const chatappListLinkedUsers = operation({
  operationId: 'chatappListLinkedUsers',
  summary: 'List the chat users of a workspace linked to platform users',
  tags,
  method: 'get',
  path: `${base}/workspaces/{teamId}/users`,
  service: 'chatapp',
  subject: 'svc.chatapp.workspaces.users',
  auth: 'manage',
  permission: 'view',
  params: TeamPath,
  reply: { status: 200, body: z.object({ linkedUsers: z.array(ChatLinkedUser) }) },
  errors: recordErrors,
});

export const CHANNEL_TYPES = ['public_channel', 'private_channel', 'mpim', 'im'] as const;

export const chatappListChannels = operation({
  operationId: 'chatappListChannels',
  summary: "List the workspace's channels (from the chat product) with their agent settings",
  tags,
  method: 'get',
  path: `${base}/workspaces/{teamId}/channels`,
  service: 'chatapp',
  subject: 'svc.chatapp.channels.list',
  auth: 'manage',
  permission: 'view',
  params: TeamPath,
  query: z.object({
    limit: z.coerce.number().int().min(1).max(1000).default(100),
    cursor: z.string().min(1).max(1024).optional(),
    types: z
      .string()
      .regex(
        new RegExp(`^(${CHANNEL_TYPES.join('|')})(,(${CHANNEL_TYPES.join('|')}))*$`),
        `must be a comma-separated list of ${CHANNEL_TYPES.join(', ')}`,
      )
      .optional(),
  }),
  reply: { status: 200, body: z.object({ channels: z.array(ChatChannel), nextCursor: z.string().nullable() }) },
  errors: chatProductErrors,
});

const BulkChannelIds = z.array(ChatChannelId).min(1).max(500);

export const chatappBulkRemoveChannelAgents = operation({
  operationId: 'chatappBulkRemoveChannelAgents',
  summary: 'Remove the agent settings of several channels',
  tags,
  method: 'delete',
  path: `${base}/workspaces/{teamId}/channels/bulk`,
  service: 'chatapp',
  subject: 'svc.chatapp.channels.bulk-remove',
  auth: 'manage',
  permission: 'edit',
  params: TeamPath,
  body: z.strictObject({ channelIds: BulkChannelIds }),
  reply: { status: 200, body: z.object({ removed: z.number().int(), success: z.boolean() }) },
  errors: recordErrors,
});

export const chatappBulkSetChannelAgents = operation({
  operationId: 'chatappBulkSetChannelAgents',
  summary: 'Set the agent of several channels (failures are reported per channel)',
  tags,
  method: 'put',
  path: `${base}/workspaces/{teamId}/channels/bulk`,
  service: 'chatapp',
  subject: 'svc.chatapp.channels.bulk-set',
  auth: 'manage',
  permission: 'edit',
  params: TeamPath,
  body: z.strictObject({ agentConfig: AgentConfigInput, channelIds: BulkChannelIds }),
  reply: {
    status: 200,
    body: z.object({
      errors: z.array(z.object({ channelId: z.string(), error: z.string() })),
      failed: z.number().int(),
      success: z.boolean(),
      updated: z.number().int(),
    }),
  },
  errors: [400, 401, 403, 404, 422, 502, 503],
});

export const chatappGetChannelSettings = operation({
  operationId: 'chatappGetChannelSettings',
  summary: 'Get the agent setting of a channel (`agentConfig` null when none)',
  tags,
  method: 'get',
  path: `${base}/workspaces/{teamId}/channels/{channelId}/settings`,
  service: 'chatapp',
  subject: 'svc.chatapp.channels.get-settings',
  auth: 'manage',
  permission: 'view',
  params: ChannelPath,
  reply: { status: 200, body: z.object({ agentConfig: AgentConfig.nullable(), channelId: z.string() }) },
  errors: recordErrors,
});

export const chatappSetChannelAgent = operation({
  operationId: 'chatappSetChannelAgent',
  summary: 'Set the agent that answers in a channel',
  tags,
  method: 'put',
  path: `${base}/workspaces/{teamId}/channels/{channelId}/settings`,
  service: 'chatapp',
  subject: 'svc.chatapp.channels.set-settings',
  auth: 'manage',
  permission: 'edit',
  params: ChannelPath,
  body: z.strictObject({
    agentConfig: AgentConfigInput,
    channelName: z.string().min(1).max(256).optional(),
    channelType: z.enum(CHANNEL_TYPES).optional(),
  }),
  reply: { status: 200, body: z.object({ configId: z.string(), success: z.boolean() }) },
  errors: [400, 401, 403, 404, 422, 502, 503],
});

export const chatappRemoveChannelAgent = operation({
  operationId: 'chatappRemoveChannelAgent',
  summary: 'Remove the agent setting of a channel',
  tags,
  method: 'delete',
  path: `${base}/workspaces/{teamId}/channels/{channelId}/settings`,
  service: 'chatapp',
  subject: 'svc.chatapp.channels.remove-settings',
  auth: 'manage',
  permission: 'edit',
  params: ChannelPath,
  reply: { status: 200, body: SuccessReply },
  errors: recordErrors,
});

export const chatappWorkspaceHealth = operation({
  operationId: 'chatappWorkspaceHealth',
  summary: "Check the bot token with the chat product and report the bot's permissions",
  tags,
  method: 'get',
  path: `${base}/workspaces/{teamId}/health`,
  service: 'chatapp',
  subject: 'svc.chatapp.workspaces.health',
  auth: 'manage',
  permission: 'view',
  params: TeamPath,
  reply: {
    status: 200,
    body: z.object({
      botId: z.string().nullable(),
      botName: z.string().nullable(),
      error: z.string().nullable(),
      healthy: z.boolean(),
      permissions: z.object({
        canPostMessages: z.boolean(),
        canReadChannels: z.boolean(),
        canReadHistory: z.boolean(),
      }),
      teamId: z.string(),
      teamName: z.string(),
    }),
  },
  errors: recordErrors,
});

const JoinFromWorkspace = z.object({ shouldAllowJoinFromWorkspace: z.boolean() });

export const chatappGetJoinFromWorkspace = operation({
  operationId: 'chatappGetJoinFromWorkspace',
  summary: 'May members of the workspace join the tenant from the chat product?',
  tags,
  method: 'get',
  path: `${base}/workspaces/{teamId}/join-from-workspace`,
  service: 'chatapp',
  subject: 'svc.chatapp.workspaces.get-join',
  auth: 'manage',
  permission: 'view',
  params: TeamPath,
  reply: { status: 200, body: JoinFromWorkspace },
  errors: recordErrors,
});

export const chatappSetJoinFromWorkspace = operation({
  operationId: 'chatappSetJoinFromWorkspace',
  summary: 'Allow or forbid joining the tenant from the workspace',
  tags,
  method: 'put',
  path: `${base}/workspaces/{teamId}/join-from-workspace`,
  service: 'chatapp',
  subject: 'svc.chatapp.workspaces.set-join',
  auth: 'manage',
  permission: 'edit',
  params: TeamPath,
  body: z.strictObject({ shouldAllowJoinFromWorkspace: z.boolean() }),
  reply: { status: 200, body: SuccessReply },
  errors: recordErrors,
});

export const chatappGetWorkspaceSettings = operation({
  operationId: 'chatappGetWorkspaceSettings',
  summary: 'Get the workspace settings (the default agent)',
  tags,
  method: 'get',
  path: `${base}/workspaces/{teamId}/settings`,
  service: 'chatapp',
  subject: 'svc.chatapp.workspaces.get-settings',
  auth: 'manage',
  permission: 'view',
  params: TeamPath,
  reply: { status: 200, body: z.object({ defaultAgent: AgentConfig.nullable() }) },
  errors: recordErrors,
});

export const chatappUpdateWorkspaceSettings = operation({
  operationId: 'chatappUpdateWorkspaceSettings',
  summary: 'Update the workspace settings (`defaultAgent`; null clears it)',
  tags,
  method: 'put',
  path: `${base}/workspaces/{teamId}/settings`,
  service: 'chatapp',
  subject: 'svc.chatapp.workspaces.set-settings',
  auth: 'manage',
  permission: 'edit',
  params: TeamPath,
  body: z.strictObject({ defaultAgent: AgentConfigInput.nullable().optional() }),
  reply: { status: 200, body: SuccessReply },
  errors: [400, 401, 403, 404, 422, 503],
});

export const chatappSendTestMessage = operation({
  operationId: 'chatappSendTestMessage',
  summary: 'Post a test message to a channel as the bot',
  description:
    "The chat product's refusal (for example `not_in_channel`) is reported as `{success: false, error}`; an unreachable chat product is a 502.",
  tags,
  method: 'post',
  path: `${base}/workspaces/{teamId}/test-message`,
  service: 'chatapp',
  subject: 'svc.chatapp.workspaces.test-message',
  auth: 'manage',
  permission: 'edit',
  params: TeamPath,
  body: z.strictObject({ channelId: ChatChannelId, message: z.string().min(1).max(4000).optional() }),
  reply: {
    status: 200,
    body: z.object({ error: z.string().nullable(), messageTs: z.string().nullable(), success: z.boolean() }),
  },
  errors: chatProductErrors,
});

// ---------------------------------------------------------------- internal (NATS only)

/**
 * Internal call `completeLinkSession` (owner: chatapp). The bot side completes a link session that `users/connect`
 * started, once the chat user has given the bot the session token. Request {sessionToken, chatappTeamId, chatappUserId,
 * chatappUsername?, chatappEmail?, chatappDisplayName?} → reply body {linkId, userId, tenantId}; problems as usual.
 */
export const CompleteLinkSessionRequest = z.object({
  sessionToken: z.string().min(1),
  chatappTeamId: TeamId,
  chatappUserId: ChatUserId,
  chatappUsername: z.string().max(256).optional(),
  chatappEmail: z.email().optional(),
  chatappDisplayName: z.string().max(256).optional(),
});
export const CompleteLinkSessionReply = z.object({ linkId: z.string(), userId: z.string(), tenantId: z.string() });
