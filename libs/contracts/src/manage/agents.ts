import { z } from 'zod';
import { operation } from '../operation';
import { createOperation, deleteOperation, getOperation, listOperation } from '../record-operations';
import { Rid, AgentPath, ProjectPath, dataReply, HeaderMap, JsonObject } from '../common';

/**
 * The full agent definition (SPEC "FullAgent"). One schema serves as the create body and the reply; the server
 * sets `createdAt`/`updatedAt` (values sent are ignored). Objects are strict (unknown fields are a 400), except the
 * free-form ones the spec leaves open (provider options, JSON schemas, transport options, capabilities).
 */

const Text = z.string().nullable().optional();

export const ModelSettings = z.strictObject({
  model: z.string().min(1).optional(),
  allowedProviders: z.array(z.string().min(1)).optional(),
  fallbackModels: z.array(z.string().min(1)).optional(),
  providerOptions: JsonObject.optional(),
});
export const Models = z.strictObject({
  base: ModelSettings.optional(),
  structuredOutput: ModelSettings.optional(),
  summarizer: ModelSettings.optional(),
});

export const StatusComponent = z.strictObject({
  type: z.string().min(1),
  description: Text,
  detailsSchema: z
    .strictObject({
      type: z.literal('object'),
      properties: JsonObject,
      required: z.array(z.string()).optional(),
    })
    .optional(),
});
export const StatusUpdates = z.strictObject({
  enabled: z.boolean().optional(),
  numEvents: z.number().int().min(1).optional(),
  timeInSeconds: z.number().int().min(1).optional(),
  prompt: Text,
  statusComponents: z.array(StatusComponent).optional(),
});

export const ContextConfig = z.strictObject({
  id: Rid,
  contextVariables: JsonObject.nullable().optional(),
  headersSchema: JsonObject.nullable().optional(),
});

export const ToolPolicies = z.record(
  z.string().min(1).max(256),
  z.strictObject({ needsApproval: z.boolean().optional() }),
);

export const CanUseEntry = z.strictObject({
  toolId: Rid,
  agentToolRelationId: Rid.optional(),
  headers: HeaderMap.nullable().optional(),
  toolPolicies: ToolPolicies.nullable().optional(),
  toolSelection: z.array(z.string().min(1)).nullable().optional(),
});

export const SubAgentSkillRef = z.strictObject({
  id: Rid,
  alwaysLoaded: z.boolean().optional(),
  index: z.number().int().min(0).optional(),
});

export const OutputContract = z.strictObject({
  allowText: z.boolean().optional(),
  onViolation: z.string().min(1).optional(),
  requireArtifact: z.array(z.string().min(1)).optional(),
  requireComponent: z.array(z.string().min(1)).optional(),
  requireTransfer: z.boolean().optional(),
  retryBudget: z.number().int().min(0).optional(),
});

export const SubAgent = z.strictObject({
  id: Rid,
  name: z.string().min(1).max(256),
  type: z.string().min(1).describe('Sub-agent kind, e.g. internal'),
  description: Text,
  prompt: z.string().max(200000).nullable().optional(),
  conversationHistoryConfig: JsonObject.nullable().optional(),
  models: Models.nullable().optional(),
  stopWhen: z
    .strictObject({ stepCountIs: z.number().int().min(1).optional() })
    .nullable()
    .optional(),
  createdAt: z.string().optional(),
  updatedAt: z.string().optional(),
  artifactComponents: z.array(Rid).optional(),
  dataComponents: z.array(z.string().min(1).max(256)).optional(),
  canDelegateTo: z.array(Rid).optional(),
  canTransferTo: z.array(Rid).optional(),
  canUse: z.array(CanUseEntry).optional(),
  skills: z.array(SubAgentSkillRef).optional(),
  outputContract: OutputContract.nullable().optional(),
});
export type SubAgent = z.infer<typeof SubAgent>;

export const ExternalAgentDef = z.strictObject({
  id: Rid,
  name: z.string().min(1).max(256),
  description: Text,
  baseUrl: z.url({ protocol: /^https?$/, message: 'must be an http or https URL' }),
  credentialReferenceId: z.string().max(256).nullable().optional(),
});
export const FunctionToolDef = z.strictObject({
  id: Rid,
  name: z.string().min(1).max(256),
  description: Text,
  functionId: Rid,
});
export const FunctionDef = z.strictObject({
  id: Rid,
  executeCode: z.string().min(1),
  inputSchema: JsonObject.nullable().optional(),
  dependencies: z.record(z.string().min(1), z.string()).nullable().optional(),
});
export const TeamAgentDef = z.strictObject({
  id: Rid,
  name: z.string().min(1).max(256),
  description: Text,
});

export const McpToolOverride = z.strictObject({
  description: Text,
  displayName: Text,
  schema: JsonObject.nullable().optional(),
  transformation: z.union([z.string(), JsonObject]).nullable().optional(),
});
export const McpToolConfig = z.strictObject({
  type: z.literal('mcp'),
  mcp: z.strictObject({
    server: z.strictObject({ url: z.url({ protocol: /^https?$/, message: 'must be an http or https URL' }) }),
    transport: z
      .strictObject({
        type: z.string().min(1).describe('e.g. streamable_http'),
        sessionId: Text,
        eventSourceInit: JsonObject.nullable().optional(),
        reconnectionOptions: JsonObject.nullable().optional(),
        requestInit: JsonObject.nullable().optional(),
      })
      .optional(),
    activeTools: z.array(z.string().min(1)).optional(),
    prompt: Text,
    toolOverrides: z.record(z.string().min(1), McpToolOverride).optional(),
  }),
});
export const ToolDef = z.strictObject({
  id: Rid,
  name: z.string().min(1).max(256),
  description: Text,
  config: McpToolConfig,
  capabilities: JsonObject.nullable().optional(),
  credentialReferenceId: z.string().max(256).nullable().optional(),
  credentialScope: z.string().max(256).nullable().optional(),
  headers: HeaderMap.nullable().optional(),
  imageUrl: z.string().max(2048).nullable().optional(),
  isWorkApp: z.boolean().optional(),
  lastError: Text,
});

/** A trigger carried inside a full agent definition (fields of the Trigger resource; only `name` required). */
export const AgentTriggerDef = z.strictObject({
  id: Rid.optional(),
  name: z.string().min(1),
  description: Text,
  enabled: z.boolean().optional(),
  dispatchDelayMs: z.number().int().min(0).max(600000).optional(),
  messageTemplate: z.string().min(1).optional(),
  inputSchema: JsonObject.nullable().optional(),
  outputTransform: JsonObject.nullable().optional(),
  runAsUserId: z.string().max(256).nullable().optional(),
  runAsUserIds: z.array(z.string().min(1)).optional(),
  createdBy: z.string().max(256).nullable().optional(),
  authentication: JsonObject.nullable().optional(),
  signingSecretCredentialReferenceId: z.string().max(256).nullable().optional(),
  signatureVerification: JsonObject.nullable().optional(),
});

const mapOf = <T extends z.ZodType>(item: T) => z.record(Rid, item);

export const FullAgent = z.strictObject({
  id: Rid,
  name: z.string().min(1).max(256),
  description: Text,
  contextConfigId: z.string().max(256).nullable().optional(),
  defaultSubAgentId: Rid.nullable().optional(),
  executionMode: z.enum(['classic', 'durable']).optional(),
  prompt: z.string().max(200000).nullable().optional(),
  models: Models.nullable().optional(),
  statusUpdates: StatusUpdates.nullable().optional(),
  stopWhen: z
    .strictObject({ transferCountIs: z.number().int().min(0).optional() })
    .nullable()
    .optional(),
  contextConfig: ContextConfig.nullable().optional(),
  subAgents: mapOf(SubAgent).refine((m) => Object.keys(m).length >= 1, {
    message: 'must contain at least 1 sub-agent',
  }),
  externalAgents: mapOf(ExternalAgentDef).optional(),
  functionTools: mapOf(FunctionToolDef).optional(),
  functions: mapOf(FunctionDef).optional(),
  teamAgents: mapOf(TeamAgentDef).optional(),
  tools: mapOf(ToolDef).optional(),
  triggers: mapOf(AgentTriggerDef).optional(),
  createdAt: z.string().optional().describe('Set by the server'),
  updatedAt: z.string().optional().describe('Set by the server'),
});
export type FullAgent = z.infer<typeof FullAgent>;

export const AvailableAgent = z.object({
  agentId: z.string(),
  agentName: z.string(),
  projectId: z.string(),
  tenantId: z.string().describe('Addition: the owning tenant (an admin sees every tenant)'),
});
export type AvailableAgent = z.infer<typeof AvailableAgent>;

const tags = ['Agents'];
/** The problems an agent read answers. */
const agentErrors = [400, 401, 403, 404, 500];

export const listAvailableAgents = operation({
  operationId: 'listAvailableAgents',
  summary: 'List the agents the caller can use',
  description:
    "Bearer token only. The platform admin sees the agents of every tenant; a tenant access token sees its own tenant's agents. Sorted by tenant, project and agent id; at most 1000 entries.",
  tags,
  method: 'get',
  path: '/manage/available-agents',
  service: 'management',
  subject: 'svc.management.agents.available',
  auth: 'bearer',
  permission: 'view',
  reply: { status: 200, body: dataReply(z.array(AvailableAgent)) },
  errors: [401, 403, 500],
});

export const createFullAgent = createOperation({
  operationId: 'createFullAgent',
  summary: 'Create a full agent definition',
  description:
    'Stores the whole definition as one document. References inside it (defaultSubAgentId, canTransferTo, canDelegateTo, canUse, functionId, skills, contextConfigId) must name what the definition (or, for skills, the project) contains: otherwise 422 with `errors[].pointer` at the field. An id already in use is a 409 with the legacy error body.',
  tags,
  path: '/manage/tenants/{tenantId}/projects/{projectId}/agent',
  service: 'management',
  subject: 'svc.management.agents.create-full',
  auth: 'manage',
  permission: 'edit',
  params: ProjectPath,
  body: FullAgent,
  item: FullAgent,
  errors: [400, 401, 403, 404, 409, 422, 500],
  errorBody: 'legacy',
  legacyErrorStatuses: [409],
});

export const listAgents = listOperation({
  operationId: 'listAgents',
  summary: 'List the full agents of a project',
  description:
    "A page of the project's agents, each as `GET PA` returns it (with its attachments), ordered by id. Deleted agents are not listed.",
  tags,
  path: '/manage/tenants/{tenantId}/projects/{projectId}/agents',
  service: 'management',
  subject: 'svc.management.agents.list',
  auth: 'manage',
  permission: 'view',
  params: ProjectPath,
  item: FullAgent,
  errors: agentErrors,
  addition: true,
});

export const getAgent = getOperation({
  operationId: 'getAgent',
  summary: 'Read a full agent',
  description:
    "The whole definition exactly as `POST P/agent` answered it, with each sub-agent's attachments rendered in. The `ETag` names this version: send it as `If-Match` to replace or delete exactly it.",
  tags,
  path: '/manage/tenants/{tenantId}/projects/{projectId}/agents/{agentId}',
  service: 'management',
  subject: 'svc.management.agents.get',
  auth: 'manage',
  permission: 'view',
  params: AgentPath,
  etag: 'read',
  item: FullAgent,
  errors: agentErrors,
  addition: true,
});

export const replaceAgent = operation({
  operationId: 'replaceAgent',
  summary: 'Replace a full agent',
  description:
    'Replaces the whole definition (the body is a FullAgent, checked exactly as on create; its `id` must be the path\'s, else 422). Attachments are rebuilt from the body\'s lists, as on create. With `If-Match`, a definition changed since that version (another editor, an attachment change, a merged improvement) answers 412 and nothing is written. Emits `agent.updated` (`change.kind: "definition"`). The answer carries the new `ETag`.',
  tags,
  method: 'put',
  path: '/manage/tenants/{tenantId}/projects/{projectId}/agents/{agentId}',
  service: 'management',
  subject: 'svc.management.agents.replace',
  auth: 'manage',
  permission: 'edit',
  params: AgentPath,
  body: FullAgent,
  etag: 'write',
  reply: { status: 200, body: dataReply(FullAgent) },
  errors: [400, 401, 403, 404, 412, 422, 500],
  addition: true,
});

export const deleteAgent = deleteOperation({
  operationId: 'deleteAgent',
  summary: 'Delete a full agent',
  description:
    'Deletes the agent with its attachments, and with it the triggers (`PA/triggers`) and the API keys bound to it (they stop working at once). With `If-Match`, an agent changed since that version answers 412 and nothing is deleted. Emits `agent.deleted`. The id may be used again by a later create.',
  tags,
  path: '/manage/tenants/{tenantId}/projects/{projectId}/agents/{agentId}',
  service: 'management',
  subject: 'svc.management.agents.delete',
  auth: 'manage',
  permission: 'edit',
  params: AgentPath,
  etag: 'write',
  reply: { status: 204, description: 'Deleted' },
  errors: [400, 401, 403, 404, 412, 500],
  addition: true,
});
