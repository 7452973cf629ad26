import { z } from 'zod';
import { operation } from '../operation';
import { deleteOperation, listOperation } from '../record-operations';
import { TenantPath, Rid, dataReply, IsoDateTime } from '../common';
import { Principal, Role } from '../principal';

/** A management access token for one tenant (an addition: how tenant-scoped management credentials are issued). */
export const AccessToken = z.object({
  id: z.string(),
  tenantId: z.string(),
  name: z.string(),
  role: Role,
  userId: z.string(),
  expiresAt: z.string().nullable(),
  createdAt: z.string(),
});
export type AccessToken = z.infer<typeof AccessToken>;

export const AccessTokenCreate = z.strictObject({
  name: z.string().min(1).max(256),
  role: Role.default('admin'),
  userId: Rid.optional().describe('User the token acts as (defaults to the token id)'),
  expiresAt: IsoDateTime.nullable().optional(),
});

const tags = ['Access'];

export const createAccessToken = operation({
  operationId: 'createAccessToken',
  summary: 'Issue a management access token for a tenant (shown once)',
  description:
    'Admins, and tenant owners for their own tenant, issue bearer tokens scoped to one tenant with a role (owner, admin, member, viewer).',
  tags,
  method: 'post',
  path: '/manage/tenants/{tenantId}/access-tokens',
  service: 'management',
  subject: 'svc.management.access-tokens.create',
  auth: 'manage',
  permission: 'admin',
  params: TenantPath,
  body: AccessTokenCreate,
  reply: { status: 201, body: dataReply(z.object({ accessToken: AccessToken, token: z.string() })) },
  errors: [400, 401, 403, 422, 500],
  addition: true,
});

export const listAccessTokens = listOperation({
  operationId: 'listAccessTokens',
  summary: 'List management access tokens of a tenant',
  tags,
  path: '/manage/tenants/{tenantId}/access-tokens',
  service: 'management',
  subject: 'svc.management.access-tokens.list',
  auth: 'manage',
  permission: 'admin',
  params: TenantPath,
  item: AccessToken,
  errors: [400, 401, 403, 500],
  addition: true,
});

export const deleteAccessToken = deleteOperation({
  operationId: 'deleteAccessToken',
  summary: 'Revoke a management access token (it stops working at once)',
  tags,
  path: '/manage/tenants/{tenantId}/access-tokens/{id}',
  service: 'management',
  subject: 'svc.management.access-tokens.delete',
  auth: 'manage',
  permission: 'admin',
  params: TenantPath.extend({ id: Rid }),
  errors: [400, 401, 403, 404, 500],
  addition: true,
});

export const Session = z.object({
  expiresAt: z.string(),
  principal: z.object({ kind: z.string(), tenantId: z.string().optional(), role: z.string().optional() }),
});

export const createSession = operation({
  operationId: 'createSession',
  // Not safe to repeat: a login issues a new session each time (and its answer is a secret, never stored for replays).
  repeat: 'never',
  summary: 'Exchange a bearer credential for a browser session cookie',
  description:
    "Sets the HTTP-only, `SameSite=Lax` `<prefix>.session_token` cookie (7 days, never past the access token's `expiresAt`). The session acts with the bearer credential's tenant and role, and ends when that access token is revoked or expires.",
  tags,
  method: 'post',
  path: '/manage/auth/session',
  service: 'management',
  subject: 'svc.management.sessions.create',
  auth: 'bearer',
  reply: { status: 201, body: dataReply(Session) },
  errors: [401, 500],
  addition: true,
});

export const deleteSession = deleteOperation({
  operationId: 'deleteSession',
  summary: 'End the current browser session',
  tags,
  path: '/manage/auth/session',
  service: 'management',
  subject: 'svc.management.sessions.delete',
  auth: 'cookie',
  errors: [401, 500],
  addition: true,
  forwardHeaders: ['cookie'],
});

/** A browser session as its owner (or the tenant's owner) sees it; never the cookie value. */
export const SessionInfo = z.object({
  id: z.string().describe('Public id of the session (not the cookie value)'),
  kind: z.enum(['admin', 'user']),
  tenantId: z.string().nullable(),
  userId: z.string().nullable(),
  role: Role.nullable(),
  accessTokenId: z
    .string()
    .nullable()
    .describe('The access token the session was made from; revoking it ends the session'),
  createdAt: z.string(),
  expiresAt: z.string(),
  ip: z.string().nullable(),
  userAgent: z.string().nullable(),
  current: z.boolean().describe('Whether this is the session the request was sent with'),
});
export type SessionInfo = z.infer<typeof SessionInfo>;

const SessionIdPath = z.object({
  id: z
    .string()
    .min(1)
    .max(100)
    .regex(/^[A-Za-z0-9_-]+$/, 'must be a session id'),
});

export const listMySessions = listOperation({
  operationId: 'listMySessions',
  summary: 'List the browser sessions of the calling user',
  description:
    'The sessions of the same user in the same tenant (for the platform admin: the admin sessions), newest first.',
  tags,
  path: '/manage/auth/sessions',
  service: 'management',
  subject: 'svc.management.sessions.list-mine',
  auth: 'manage',
  item: SessionInfo,
  errors: [400, 401, 500],
  addition: true,
  forwardHeaders: ['cookie'],
});

export const deleteMySession = deleteOperation({
  operationId: 'deleteMySession',
  summary: "End one of the calling user's browser sessions",
  tags,
  path: '/manage/auth/sessions/{id}',
  service: 'management',
  subject: 'svc.management.sessions.delete-mine',
  auth: 'manage',
  params: SessionIdPath,
  errors: [400, 401, 404, 500],
  addition: true,
});

export const listTenantSessions = listOperation({
  operationId: 'listTenantSessions',
  summary: 'List the browser sessions of a tenant',
  tags,
  path: '/manage/tenants/{tenantId}/sessions',
  service: 'management',
  subject: 'svc.management.tenant-sessions.list',
  auth: 'manage',
  permission: 'admin',
  params: TenantPath,
  item: SessionInfo,
  errors: [400, 401, 403, 500],
  addition: true,
  forwardHeaders: ['cookie'],
});

export const SessionsEnded = z.object({ ended: z.number().int().describe('How many sessions were ended') });

export const deleteTenantSessions = operation({
  operationId: 'deleteTenantSessions',
  summary: 'End every browser session of a tenant (or of one user of it)',
  tags,
  method: 'delete',
  path: '/manage/tenants/{tenantId}/sessions',
  service: 'management',
  subject: 'svc.management.tenant-sessions.delete-all',
  auth: 'manage',
  permission: 'admin',
  params: TenantPath,
  query: z.object({ userId: Rid.optional().describe("Only this user's sessions") }),
  reply: { status: 200, body: dataReply(SessionsEnded) },
  errors: [400, 401, 403, 500],
  addition: true,
});

export const deleteTenantSession = deleteOperation({
  operationId: 'deleteTenantSession',
  summary: 'End one browser session of a tenant',
  tags,
  path: '/manage/tenants/{tenantId}/sessions/{id}',
  service: 'management',
  subject: 'svc.management.tenant-sessions.delete',
  auth: 'manage',
  permission: 'admin',
  params: TenantPath.merge(SessionIdPath),
  errors: [400, 401, 403, 404, 500],
  addition: true,
});

/** Internal call `resolveManageCredential`: the gateway resolves a bearer token or session id to a principal (null: not valid). */
export const ResolveManageCredential = z.object({ bearer: z.string().optional(), session: z.string().optional() });
export const ResolveManageCredentialReply = z.object({ principal: Principal.nullable() });

/** Internal call `verifyPlaygroundToken`: run-auth asks whether a run-API bearer token is a playground token (reply: its claims, or null). */
export const VerifyPlaygroundTokenRequest = z.object({ token: z.string() });
export const PlaygroundTokenClaims = z.object({
  tenantId: z.string(),
  projectId: z.string(),
  agentId: z.string(),
  subject: z.string(),
});
export const VerifyPlaygroundTokenReply = PlaygroundTokenClaims.nullable();

/** Payload of the `credentialRevoked` notice (core NATS, not stored): a credential was revoked or changed; every gateway drops its cached verification. */
export const CredentialRevoked = z.object({
  apiKeyId: z.string().optional(),
  accessTokenId: z.string().optional(),
  /** A session ended: its public id, `sessionId(cookie value)` from @platform/secrets. */
  sessionId: z.string().optional(),
  analyticsKeyId: z.string().optional(),
});
export type CredentialRevoked = z.infer<typeof CredentialRevoked>;
