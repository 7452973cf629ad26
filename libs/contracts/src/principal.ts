import { z } from 'zod';

export const Role = z.enum(['owner', 'admin', 'member', 'viewer']);
export type Role = z.infer<typeof Role>;

/** Who made a request, as the gateway authenticated it. Travels with every NATS request. */
export const Principal = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('anonymous') }),
  /** The platform admin: every tenant. */
  z.object({ kind: z.literal('admin'), via: z.enum(['bearer', 'cookie']) }),
  /** A tenant member, with a management access token or a session. */
  z.object({
    kind: z.literal('user'),
    userId: z.string(),
    tenantId: z.string(),
    role: Role,
    via: z.enum(['bearer', 'cookie']),
    /** The access token the credential is (bearer) or was made from (session); absent for the admin token. */
    accessTokenId: z.string().optional(),
    /** When the credential stops working: the token's expiry, or the session's (caches must not outlive it). */
    expiresAt: z.string().nullable().optional(),
  }),
  /** A run-API caller. */
  z.object({
    kind: z.literal('run'),
    tenantId: z.string(),
    projectId: z.string(),
    agentId: z.string().optional(),
    appId: z.string().optional(),
    apiKeyId: z.string().optional(),
    subject: z.string().optional(),
    authMethod: z.string(),
    /** A resolved ref (the project's deployed definitions) exists for this credential. */
    ref: z.string().optional(),
    /** When the credential stops working (caches must not outlive it). */
    expiresAt: z.string().nullable().optional(),
  }),
  /** An analytics ingest key of a web integration. */
  z.object({
    kind: z.literal('analytics'),
    tenantId: z.string(),
    projectId: z.string(),
    integrationId: z.string(),
    keyId: z.string(),
  }),
]);
export type Principal = z.infer<typeof Principal>;

export const roleRank: Record<Role, number> = { viewer: 0, member: 1, admin: 2, owner: 3 };
export const permissionRole = { view: 'viewer', use: 'member', edit: 'admin', admin: 'owner' } as const;

/** Request metadata the gateway passes along. */
export const RequestMeta = z.object({
  ip: z.string().optional(),
  origin: z.string().optional(),
  userAgent: z.string().optional(),
  headers: z.record(z.string(), z.string()).optional(),
  baseUrl: z.string().optional(),
  /** Id of the credential the gateway verified (access token id, session id, `admin-token`); never the secret. */
  credentialId: z.string().optional(),
  /** The body's exact bytes, base64 (operations with `bodyType: 'raw'`). */
  rawBody: z.string().optional(),
});
export type RequestMeta = z.infer<typeof RequestMeta>;
