import { z } from 'zod';
import { operation } from '../operation';
import { deleteOperation, getOperation, listOperation, updateOperation } from '../record-operations';
import { Rid, ProjectPath, IdPath, ListQuery, dataReply, TenantPath } from '../common';

export const ApiKey = z.object({
  id: z.string(),
  name: z.string(),
  agentId: z.string(),
  publicId: z.string(),
  keyPrefix: z.string(),
  expiresAt: z.string().nullable(),
  lastUsedAt: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type ApiKey = z.infer<typeof ApiKey>;

const KeyTime = z.iso.datetime({ offset: true }).describe('ISO 8601 date-time');

export const ApiKeyCreate = z.strictObject({
  agentId: Rid,
  name: z.string().min(1).max(256),
  createdAt: KeyTime.optional(),
  expiresAt: KeyTime.nullable().optional(),
  updatedAt: KeyTime.optional(),
});
export type ApiKeyCreate = z.infer<typeof ApiKeyCreate>;

export const ApiKeyUpdate = z.strictObject({
  agentId: Rid.optional(),
  expiresAt: KeyTime.nullable().optional(),
  name: z.string().min(1).max(256).optional(),
  updatedAt: KeyTime.optional(),
});
export type ApiKeyUpdate = z.infer<typeof ApiKeyUpdate>;

const tags = ['API keys'];
/** The problems an API-key operation answers (a write to the project also 409, see `operation()`). */
const apiKeyErrors = [400, 401, 403, 404, 422, 500];

export const listApiKeys = listOperation({
  operationId: 'listApiKeys',
  summary: 'List API keys of a project',
  tags,
  path: '/manage/tenants/{tenantId}/projects/{projectId}/api-keys',
  service: 'management',
  subject: 'svc.management.api-keys.list',
  auth: 'manage',
  permission: 'view',
  params: ProjectPath,
  query: ListQuery.extend({ agentId: Rid.optional() }),
  item: ApiKey,
  errors: apiKeyErrors,
});

export const createApiKey = operation({
  operationId: 'createApiKey',
  summary: 'Create an API key (the key value is shown once)',
  description:
    'The key is bound to `agentId`, an agent of this project: 422 (pointer `/agentId`) when there is none by that id.',
  tags,
  method: 'post',
  path: '/manage/tenants/{tenantId}/projects/{projectId}/api-keys',
  service: 'management',
  subject: 'svc.management.api-keys.create',
  auth: 'manage',
  permission: 'use',
  params: ProjectPath,
  body: ApiKeyCreate,
  reply: { status: 201, body: dataReply(z.object({ apiKey: ApiKey, key: z.string() })) },
  errors: apiKeyErrors,
});

export const getApiKey = getOperation({
  operationId: 'getApiKey',
  summary: 'Get an API key',
  tags,
  path: '/manage/tenants/{tenantId}/projects/{projectId}/api-keys/{id}',
  service: 'management',
  subject: 'svc.management.api-keys.get',
  auth: 'manage',
  permission: 'view',
  params: IdPath,
  item: ApiKey,
  errors: apiKeyErrors,
});

export const updateApiKey = updateOperation({
  operationId: 'updateApiKey',
  summary: 'Update an API key',
  description: 'A new `agentId` must name an agent of this project (422, pointer `/agentId`, otherwise).',
  tags,
  path: '/manage/tenants/{tenantId}/projects/{projectId}/api-keys/{id}',
  service: 'management',
  subject: 'svc.management.api-keys.update',
  auth: 'manage',
  permission: 'use',
  params: IdPath,
  body: ApiKeyUpdate,
  item: ApiKey,
  errors: apiKeyErrors,
});

export const deleteApiKey = deleteOperation({
  operationId: 'deleteApiKey',
  summary: 'Delete an API key (it stops working at once)',
  tags,
  path: '/manage/tenants/{tenantId}/projects/{projectId}/api-keys/{id}',
  service: 'management',
  subject: 'svc.management.api-keys.delete',
  auth: 'manage',
  permission: 'use',
  params: IdPath,
  errors: apiKeyErrors,
  errorBody: 'legacy',
});

export const PlaygroundTokenRequest = z.strictObject({ agentId: z.string().min(1), projectId: z.string().min(1) });
export const PlaygroundToken = z.object({ apiKey: z.string(), appId: z.string(), expiresAt: z.string() });

export const createPlaygroundToken = operation({
  operationId: 'createPlaygroundToken',
  summary: 'Issue a short-lived run-API token for the playground (session cookie only)',
  tags,
  method: 'post',
  path: '/manage/tenants/{tenantId}/playground/token',
  service: 'management',
  subject: 'svc.management.playground.token',
  auth: 'cookie',
  permission: 'use',
  params: TenantPath,
  body: PlaygroundTokenRequest,
  reply: { status: 200, body: PlaygroundToken },
  errors: [400, 401, 403, 404, 500],
  errorBody: 'legacy',
});

/** Internal call `verifyApiKey`: resolve a run-API key to its scope (null: not a valid key). */
export const VerifyApiKeyRequest = z.object({ key: z.string() });
export const VerifiedApiKey = z.object({
  id: z.string(),
  tenantId: z.string(),
  projectId: z.string(),
  agentId: z.string(),
  expiresAt: z.string().nullable(),
});
export type VerifiedApiKey = z.infer<typeof VerifiedApiKey>;
export const VerifyApiKeyReply = VerifiedApiKey.nullable();
