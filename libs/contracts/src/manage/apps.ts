import { z } from 'zod';
import { operation } from '../operation';
import { createOperation, deleteOperation, getOperation, updateOperation } from '../record-operations';
import { ProjectPath, TenantPath, ListQuery, Pagination, dataReply, Rid } from '../common';

export const APP_TYPES = ['web_client', 'api', 'support_copilot'] as const;
export const AppType = z.enum(APP_TYPES);
export type AppType = z.infer<typeof AppType>;

export const APP_KEY_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;
export const AppKeyAlgorithm = z.enum(APP_KEY_ALGORITHMS);
export type AppKeyAlgorithm = z.infer<typeof AppKeyAlgorithm>;

/** A public key an app's backend signs client JWTs with. */
export const AppPublicKey = z.object({
  kid: z.string(),
  algorithm: AppKeyAlgorithm,
  publicKey: z.string().describe('PEM-encoded SPKI public key'),
  addedAt: z.string().describe('ISO 8601 date-time'),
});
export type AppPublicKey = z.infer<typeof AppPublicKey>;

export const AppPublicKeyCreate = z.strictObject({
  kid: z
    .string()
    .min(1)
    .max(255)
    .regex(/^[^\u0000-\u001f\u007f]+$/, 'must not contain control characters'),
  algorithm: AppKeyAlgorithm,
  publicKey: z.string().min(1).max(16_384).describe('PEM-encoded public key (-----BEGIN PUBLIC KEY-----)'),
});
export type AppPublicKeyCreate = z.infer<typeof AppPublicKeyCreate>;

/** A host pattern: `example.com`, `example.com:8443`, `*.example.com`, or `*` (every origin). */
const DomainPattern = z
  .string()
  .min(1)
  .max(253)
  .regex(/^(\*|(\*\.)?[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:\d{1,5})?)$/, 'must be a host, host:port, *.domain or *');

export const WebClientConfig = z.object({
  allowAnonymous: z.boolean(),
  allowedDomains: z.array(z.string()),
  audience: z.string().nullable(),
  publicKeys: z.array(AppPublicKey),
});
export const SupportCopilotConfig = z.object({ audience: z.string().nullable() });

export const AppConfig = z.object({
  type: AppType,
  webClient: WebClientConfig.optional(),
  supportCopilot: SupportCopilotConfig.optional(),
});
export type AppConfig = z.infer<typeof AppConfig>;

export const App = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  prompt: z.string().nullable(),
  tenantId: z.string(),
  projectId: z.string(),
  type: AppType,
  enabled: z.boolean(),
  defaultAgentId: z.string().nullable(),
  defaultProjectId: z.string().nullable(),
  config: AppConfig,
  createdAt: z.string(),
  updatedAt: z.string(),
  lastUsedAt: z.string().nullable(),
});
export type App = z.infer<typeof App>;

const Str256 = z.string().min(1).max(256);
const Audience = z.string().min(1).max(256);

const WebClientConfigInput = z.strictObject({
  allowAnonymous: z.boolean().default(false),
  allowedDomains: z.array(DomainPattern).max(100),
  audience: Audience.nullable().optional(),
  publicKeys: z.array(AppPublicKeyCreate).max(20).optional(),
});
const SupportCopilotConfigInput = z.strictObject({ audience: Audience.nullable().optional() });

export const AppConfigInput = z
  .strictObject({
    type: AppType,
    webClient: WebClientConfigInput.optional(),
    supportCopilot: SupportCopilotConfigInput.optional(),
  })
  .refine((c) => c.type === 'web_client' || c.webClient === undefined, {
    message: 'webClient applies to web_client apps only',
    path: ['webClient'],
  })
  .refine((c) => c.type === 'support_copilot' || c.supportCopilot === undefined, {
    message: 'supportCopilot applies to support_copilot apps only',
    path: ['supportCopilot'],
  });
export type AppConfigInput = z.infer<typeof AppConfigInput>;

export const AppCreate = z
  .strictObject({
    name: Str256,
    type: AppType,
    config: AppConfigInput,
    description: z.string().max(2000).nullable().optional(),
    prompt: z.string().max(200_000).nullable().optional(),
    defaultAgentId: Rid.nullable().optional(),
    defaultProjectId: Str256.nullable().optional(),
    enabled: z.boolean().default(true),
  })
  .refine((b) => b.config.type === b.type, { message: 'config.type must equal the app type', path: ['config', 'type'] })
  .refine((b) => b.type !== 'web_client' || b.config.webClient !== undefined, {
    message: 'a web_client app needs config.webClient',
    path: ['config', 'webClient'],
  });
export type AppCreate = z.infer<typeof AppCreate>;

/** PATCH: every field optional; `config.webClient` / `config.supportCopilot` fields are merged one by one. Keys are managed with the key operations. */
export const AppUpdate = z.strictObject({
  name: Str256.optional(),
  description: z.string().max(2000).nullable().optional(),
  prompt: z.string().max(200_000).nullable().optional(),
  defaultAgentId: Rid.nullable().optional(),
  defaultProjectId: Str256.nullable().optional(),
  enabled: z.boolean().optional(),
  config: z
    .strictObject({
      type: AppType.optional().describe('If given, must equal the app type (the type cannot change)'),
      webClient: z
        .strictObject({
          allowAnonymous: z.boolean().optional(),
          allowedDomains: z.array(DomainPattern).max(100).optional(),
          audience: Audience.nullable().optional(),
        })
        .optional(),
      supportCopilot: SupportCopilotConfigInput.optional(),
    })
    .optional(),
});
export type AppUpdate = z.infer<typeof AppUpdate>;

export const AppListQuery = ListQuery.extend({ type: AppType.optional() });
export const AppListReply = z.object({
  data: z.array(App),
  pagination: Pagination,
  role: z.string().describe("The caller's role: owner for the platform admin, else the access token's role"),
  tenantHasAnyApps: z.boolean().describe('Whether the tenant has at least one app (any project, any type)'),
});

export const AppPath = ProjectPath.extend({ appId: z.string().min(1).max(255) });
export const AppKeyPath = AppPath.extend({ kid: z.string().min(1).max(255) });

const tags = ['Apps'];
const base = '/manage/tenants/{tenantId}/projects/{projectId}/apps';
/** The problems an app operation answers (a write to the project also 409, see `operation()`). */
const appErrors = [400, 401, 403, 404, 422, 500];

export const listTenantApps = operation({
  operationId: 'listTenantApps',
  summary: 'List the apps of a tenant (every project)',
  tags,
  method: 'get',
  path: '/manage/tenants/{tenantId}/apps',
  service: 'management',
  subject: 'svc.management.apps.list-tenant',
  auth: 'manage',
  permission: 'view',
  params: TenantPath,
  query: AppListQuery,
  reply: { status: 200, body: AppListReply },
  errors: appErrors,
});

export const listApps = operation({
  operationId: 'listApps',
  summary: 'List the apps of a project',
  tags,
  method: 'get',
  path: base,
  service: 'management',
  subject: 'svc.management.apps.list',
  auth: 'manage',
  permission: 'view',
  params: ProjectPath,
  query: AppListQuery,
  reply: { status: 200, body: AppListReply },
  errors: appErrors,
});

export const createApp = operation({
  operationId: 'createApp',
  summary: 'Create an app (app credential)',
  tags,
  method: 'post',
  path: base,
  service: 'management',
  subject: 'svc.management.apps.create',
  auth: 'manage',
  permission: 'edit',
  params: ProjectPath,
  body: AppCreate,
  reply: { status: 201, body: dataReply(z.object({ app: App })) },
  errors: appErrors,
});

export const getApp = getOperation({
  operationId: 'getApp',
  summary: 'Get an app',
  tags,
  path: `${base}/{appId}`,
  service: 'management',
  subject: 'svc.management.apps.get',
  auth: 'manage',
  permission: 'view',
  params: AppPath,
  item: App,
  errors: [400, 401, 403, 404, 500],
  addition: true,
});

export const updateApp = updateOperation({
  operationId: 'updateApp',
  summary: 'Update an app (name, description, enabled, default agent, config)',
  tags,
  path: `${base}/{appId}`,
  service: 'management',
  subject: 'svc.management.apps.update',
  auth: 'manage',
  permission: 'edit',
  params: AppPath,
  body: AppUpdate,
  item: App,
  errors: appErrors,
  addition: true,
});

export const deleteApp = deleteOperation({
  operationId: 'deleteApp',
  summary: 'Delete an app (its credentials stop working at once)',
  tags,
  path: `${base}/{appId}`,
  service: 'management',
  subject: 'svc.management.apps.delete',
  auth: 'manage',
  permission: 'edit',
  params: AppPath,
  errors: [400, 401, 403, 404, 500],
  addition: true,
});

export const listAppKeys = operation({
  operationId: 'listAppKeys',
  summary: 'List the public keys of an app',
  tags,
  method: 'get',
  path: `${base}/{appId}/auth/keys`,
  service: 'management',
  subject: 'svc.management.apps.keys.list',
  auth: 'manage',
  permission: 'view',
  params: AppPath,
  reply: { status: 200, body: dataReply(z.array(AppPublicKey)) },
  errors: appErrors,
});

export const addAppKey = createOperation({
  operationId: 'addAppKey',
  summary: 'Register a public key of an app (kid unique per app)',
  tags,
  path: `${base}/{appId}/auth/keys`,
  service: 'management',
  subject: 'svc.management.apps.keys.add',
  auth: 'manage',
  permission: 'edit',
  params: AppPath,
  body: AppPublicKeyCreate,
  item: AppPublicKey,
  errors: appErrors,
});

export const deleteAppKey = deleteOperation({
  operationId: 'deleteAppKey',
  summary: 'Remove a public key of an app (tokens signed with it stop working at once)',
  tags,
  path: `${base}/{appId}/auth/keys/{kid}`,
  service: 'management',
  subject: 'svc.management.apps.keys.delete',
  auth: 'manage',
  permission: 'edit',
  params: AppKeyPath,
  errors: appErrors,
});
