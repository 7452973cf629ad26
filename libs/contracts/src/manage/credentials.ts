import { z } from 'zod';
import { operation } from '../operation';
import { deleteOperation, getOperation, listOperation, updateOperation } from '../record-operations';
import { Rid, ProjectPath, IdPath, dataReply, HeaderMap, JsonObject } from '../common';
import { text } from '../text';

/** Credential store kinds (SPEC "Credential"). */
export const CREDENTIAL_TYPES = ['memory', 'keychain', 'connbroker1', 'connbroker2'] as const;
export const CredentialType = z.enum(CREDENTIAL_TYPES);
export type CredentialType = z.infer<typeof CredentialType>;

/** An external agent that uses a credential (listed on the credential). */
export const CredentialExternalAgent = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  baseUrl: z.string(),
  credentialReferenceId: z.string(),
  tenantId: z.string(),
  projectId: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

/** A tool that uses a credential (listed on the credential). */
export const CredentialTool = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  capabilities: z.unknown(),
  config: z.unknown(),
  credentialReferenceId: z.string(),
  credentialScope: z.string().nullable(),
  headers: z.record(z.string(), z.string()).nullable(),
  imageUrl: z.string().nullable(),
  isWorkApp: z.boolean(),
  lastError: z.string().nullable(),
  tenantId: z.string(),
  projectId: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const Credential = z.object({
  id: z.string(),
  name: z.string(),
  type: CredentialType,
  credentialStoreId: z.string(),
  createdBy: z.string().nullable(),
  toolId: z.string().nullable(),
  userId: z.string().nullable(),
  retrievalParams: z.record(z.string(), z.unknown()).nullable(),
  externalAgents: z.array(CredentialExternalAgent),
  tools: z.array(CredentialTool),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Credential = z.infer<typeof Credential>;

const Short = text({ max: 256 });
const fields = {
  id: Rid,
  credentialStoreId: Rid,
  name: text({ min: 1, max: 256 }),
  type: CredentialType,
  createdBy: Short,
  retrievalParams: JsonObject,
  toolId: Short,
  userId: Short,
};

export const CredentialCreate = z.strictObject({
  id: fields.id,
  credentialStoreId: fields.credentialStoreId,
  name: fields.name,
  type: fields.type,
  createdBy: fields.createdBy.nullable().optional(),
  retrievalParams: fields.retrievalParams.nullable().optional(),
  toolId: fields.toolId.nullable().optional(),
  userId: fields.userId.nullable().optional(),
});
export type CredentialCreate = z.infer<typeof CredentialCreate>;

export const CredentialUpdate = z.strictObject({
  id: fields.id.optional().describe('Must equal the path id when given (ids cannot be changed)'),
  credentialStoreId: fields.credentialStoreId.optional(),
  name: fields.name.optional(),
  type: fields.type.optional(),
  createdBy: fields.createdBy.nullable().optional(),
  retrievalParams: fields.retrievalParams.nullable().optional(),
  toolId: fields.toolId.nullable().optional(),
  userId: fields.userId.nullable().optional(),
});
export type CredentialUpdate = z.infer<typeof CredentialUpdate>;

export const CredentialStore = z.object({
  id: z.string(),
  type: CredentialType,
  available: z.boolean(),
  reason: z.string().nullable().describe('Why the store is unavailable (null when it is available)'),
});
export type CredentialStore = z.infer<typeof CredentialStore>;

export const CredentialStoreEntryCreate = z.strictObject({
  key: z
    .string()
    .min(1)
    .max(255)
    .regex(/^[^\u0000-\u001f\u007f]+$/, 'must not contain control characters'),
  value: z.string().min(1).max(65536).describe('The secret; encrypted at rest and never returned'),
  metadata: HeaderMap.optional().describe(
    'Injected as HTTP headers on outbound tool-server requests: keys must be valid header names',
  ),
});
export type CredentialStoreEntryCreate = z.infer<typeof CredentialStoreEntryCreate>;

export const CredentialStoreEntry = z.object({ key: z.string(), storeId: z.string(), createdAt: z.string() });
export type CredentialStoreEntry = z.infer<typeof CredentialStoreEntry>;

const tags = ['Credentials'];
const base = '/manage/tenants/{tenantId}/projects/{projectId}/credentials';
/** The problems a credential operation answers (a write to the project also 409, see `operation()`). */
const credentialErrors = [400, 401, 403, 404, 422, 500];
const stores = '/manage/tenants/{tenantId}/projects/{projectId}/credential-stores';

export const listCredentials = listOperation({
  operationId: 'listCredentials',
  summary: 'List credentials of a project',
  tags,
  path: base,
  service: 'management',
  subject: 'svc.management.credentials.list',
  auth: 'manage',
  permission: 'view',
  params: ProjectPath,
  item: Credential,
  errors: credentialErrors,
});

export const createCredential = operation({
  operationId: 'createCredential',
  summary: 'Create a credential reference',
  description:
    '201 when the credential is created; 200 when a credential with this id already exists with identical content (a safe retry), returned unchanged; 409 when the id exists with other content.',
  tags,
  method: 'post',
  path: base,
  service: 'management',
  subject: 'svc.management.credentials.create',
  auth: 'manage',
  permission: 'edit',
  params: ProjectPath,
  body: CredentialCreate,
  reply: { status: 201, body: dataReply(Credential), description: 'Created' },
  extraReplies: [
    {
      status: 200,
      body: dataReply(Credential),
      description: 'Already exists with identical content; returned unchanged',
    },
  ],
  errors: credentialErrors,
});

export const getCredential = getOperation({
  operationId: 'getCredential',
  summary: 'Get a credential',
  tags,
  path: `${base}/{id}`,
  service: 'management',
  subject: 'svc.management.credentials.get',
  auth: 'manage',
  permission: 'view',
  params: IdPath,
  item: Credential,
  errors: credentialErrors,
});

export const updateCredential = updateOperation({
  operationId: 'updateCredential',
  summary: 'Update a credential',
  tags,
  path: `${base}/{id}`,
  service: 'management',
  subject: 'svc.management.credentials.update',
  auth: 'manage',
  permission: 'edit',
  params: IdPath,
  body: CredentialUpdate,
  item: Credential,
  errors: credentialErrors,
});

export const deleteCredential = deleteOperation({
  operationId: 'deleteCredential',
  summary: 'Delete a credential',
  description:
    'Also removes the memory-store entry named by `retrievalParams.key`. 409 while a trigger uses the credential as its signing secret.',
  tags,
  path: `${base}/{id}`,
  service: 'management',
  subject: 'svc.management.credentials.delete',
  auth: 'manage',
  permission: 'edit',
  params: IdPath,
  reply: { status: 204, description: 'Deleted' },
  errors: credentialErrors,
  addition: true,
});

export const listCredentialStores = operation({
  operationId: 'listCredentialStores',
  summary: 'List credential stores and whether each is available',
  tags: ['Credential stores'],
  method: 'get',
  path: stores,
  service: 'management',
  subject: 'svc.management.credential-stores.list',
  auth: 'manage',
  permission: 'view',
  params: ProjectPath,
  reply: { status: 200, body: z.object({ data: z.array(CredentialStore) }) },
  errors: credentialErrors,
});

export const createCredentialStoreEntry = operation({
  operationId: 'createCredentialStoreEntry',
  summary: 'Put a secret into a credential store',
  description:
    'The value (and metadata) are encrypted at rest and never returned. 201 when the key is new in this store, 200 when an existing key was replaced. Unknown store: 404. Unavailable store: 422.',
  tags: ['Credential stores'],
  method: 'post',
  path: `${stores}/{id}/credentials`,
  service: 'management',
  subject: 'svc.management.credential-stores.entries.create',
  auth: 'manage',
  permission: 'edit',
  params: IdPath,
  body: CredentialStoreEntryCreate,
  reply: { status: 201, body: dataReply(CredentialStoreEntry), description: 'Stored' },
  extraReplies: [{ status: 200, body: dataReply(CredentialStoreEntry), description: 'An existing key was replaced' }],
  errors: credentialErrors,
});
