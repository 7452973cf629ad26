import { z } from 'zod';
import { operation, type OperationDef } from '../operation';
import {
  Rid,
  AgentPath,
  ListQuery,
  listReply,
  dataReply,
  HeaderMap,
  IsoDateTime,
  MessageRemovedReply,
  ExistsReply,
} from '../common';
import { ToolPolicies } from './agents';
import { Skill } from './skills';

/**
 * Attachments of skills, tools, external agents, data components, artifact components and function tools to the
 * sub-agents of a stored full agent (SPEC "Sub-agent attachments", prefix PA). Every attachment names a sub-agent
 * of the stored definition (404 otherwise); the attached tool, function tool and external agent must be defined in
 * it too, and the skill must exist in the project (404 otherwise).
 */

const PA = '/manage/tenants/{tenantId}/projects/{projectId}/agents/{agentId}';
const SubAgentPath = AgentPath.extend({ subAgentId: Rid });
const Id256 = z.string().min(1).max(256);
const errors = [400, 401, 403, 404, 422, 500];
const ReverseLink = z.object({ createdAt: z.string(), subAgentId: z.string() });

function op<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType, R extends z.ZodType>(
  def: Omit<OperationDef<P, Q, B, R>, 'service' | 'auth' | 'errors'> & { errors?: number[] },
): OperationDef<P, Q, B, R> {
  return operation({ service: 'management', auth: 'manage', errors, ...def });
}

// ---- External agent relations ----------------------------------------------------------------------------------

export const ExternalAgentRelation = z.object({
  id: z.string(),
  subAgentId: z.string(),
  externalAgentId: z.string(),
  headers: z.record(z.string(), z.string()).nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type ExternalAgentRelation = z.infer<typeof ExternalAgentRelation>;

export const ExternalAgentRelationCreate = z.strictObject({
  externalAgentId: Rid,
  headers: HeaderMap.nullable().optional(),
  createdAt: IsoDateTime.optional(),
  updatedAt: IsoDateTime.optional(),
});
export type ExternalAgentRelationCreate = z.infer<typeof ExternalAgentRelationCreate>;

export const ExternalAgentRelationUpdate = z.strictObject({
  id: Rid.optional(),
  subAgentId: Rid.optional(),
  externalAgentId: Rid.optional(),
  headers: HeaderMap.nullable().optional(),
  createdAt: IsoDateTime.optional(),
  updatedAt: IsoDateTime.optional(),
});
export type ExternalAgentRelationUpdate = z.infer<typeof ExternalAgentRelationUpdate>;

const extBase = `${PA}/sub-agents/{subAgentId}/external-agent-relations`;
const ExtIdPath = SubAgentPath.extend({ id: Rid });
const extTags = ['Sub-agent external agents'];

export const listExternalAgentRelations = op({
  operationId: 'listExternalAgentRelations',
  summary: 'List the external agents a sub-agent may delegate to',
  tags: extTags,
  method: 'get',
  path: extBase,
  subject: 'svc.management.external-agent-relations.list',
  permission: 'view',
  params: SubAgentPath,
  query: ListQuery,
  reply: { status: 200, body: listReply(ExternalAgentRelation) },
});
export const createExternalAgentRelation = op({
  operationId: 'createExternalAgentRelation',
  summary: 'Relate an external agent (defined in the agent) to a sub-agent',
  tags: extTags,
  method: 'post',
  path: extBase,
  subject: 'svc.management.external-agent-relations.create',
  permission: 'edit',
  params: SubAgentPath,
  body: ExternalAgentRelationCreate,
  reply: { status: 201, body: dataReply(ExternalAgentRelation) },
  errors: [...errors, 409],
});
export const getExternalAgentRelation = op({
  operationId: 'getExternalAgentRelation',
  summary: 'Get an external agent relation',
  tags: extTags,
  method: 'get',
  path: `${extBase}/{id}`,
  subject: 'svc.management.external-agent-relations.get',
  permission: 'view',
  params: ExtIdPath,
  reply: { status: 200, body: dataReply(ExternalAgentRelation) },
});
export const updateExternalAgentRelation = op({
  operationId: 'updateExternalAgentRelation',
  summary: 'Update an external agent relation',
  tags: extTags,
  method: 'patch',
  path: `${extBase}/{id}`,
  subject: 'svc.management.external-agent-relations.update',
  permission: 'edit',
  params: ExtIdPath,
  body: ExternalAgentRelationUpdate,
  reply: { status: 200, body: dataReply(ExternalAgentRelation) },
  errors: [...errors, 409],
});
export const deleteExternalAgentRelation = op({
  operationId: 'deleteExternalAgentRelation',
  summary: 'Remove an external agent relation',
  tags: extTags,
  method: 'delete',
  path: `${extBase}/{id}`,
  subject: 'svc.management.external-agent-relations.delete',
  permission: 'edit',
  params: ExtIdPath,
  reply: { status: 200, body: MessageRemovedReply },
});

// ---- Sub-agent skills ------------------------------------------------------------------------------------------

export const SubAgentSkill = z.object({
  id: z.string(),
  subAgentId: z.string(),
  skillId: z.string(),
  index: z.number().int(),
  alwaysLoaded: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type SubAgentSkill = z.infer<typeof SubAgentSkill>;

export const SubAgentSkillCreate = z.strictObject({
  agentId: Id256.describe('Must equal the agentId of the path'),
  skillId: Rid,
  subAgentId: Rid,
  index: z.number().int().min(0),
  alwaysLoaded: z.boolean().default(false),
});
export type SubAgentSkillCreate = z.infer<typeof SubAgentSkillCreate>;

export const SubAgentSkillListItem = Skill.extend({
  alwaysLoaded: z.boolean(),
  index: z.number().int(),
  subAgentId: z.string(),
  subAgentSkillId: z.string(),
});

const skillTags = ['Sub-agent skills'];

export const createSubAgentSkill = op({
  operationId: 'createSubAgentSkill',
  summary: 'Attach a skill of the project to a sub-agent',
  tags: skillTags,
  method: 'post',
  path: `${PA}/sub-agent-skills`,
  subject: 'svc.management.sub-agent-skills.create',
  permission: 'edit',
  params: AgentPath,
  body: SubAgentSkillCreate,
  reply: { status: 201, body: dataReply(SubAgentSkill) },
  errors: [...errors, 409],
});
export const listSubAgentSkills = op({
  operationId: 'listSubAgentSkills',
  summary: 'List the skills of a sub-agent, in index order',
  tags: skillTags,
  method: 'get',
  path: `${PA}/sub-agent-skills/agent/{subAgentId}`,
  subject: 'svc.management.sub-agent-skills.list',
  permission: 'view',
  params: SubAgentPath,
  reply: { status: 200, body: dataReply(z.array(SubAgentSkillListItem)) },
});
export const deleteSubAgentSkill = op({
  operationId: 'deleteSubAgentSkill',
  summary: 'Detach a skill from a sub-agent',
  tags: skillTags,
  method: 'delete',
  path: `${PA}/sub-agent-skills/agent/{subAgentId}/skill/{skillId}`,
  subject: 'svc.management.sub-agent-skills.delete',
  permission: 'edit',
  params: SubAgentPath.extend({ skillId: Rid }),
  reply: { status: 204 },
});

// ---- Sub-agent tool relations ----------------------------------------------------------------------------------

export const SubAgentToolRelation = z.object({
  id: z.string(),
  subAgentId: z.string(),
  toolId: z.string(),
  headers: z.record(z.string(), z.string()).nullable(),
  selectedTools: z.array(z.string()).nullable(),
  toolPolicies: z.record(z.string(), z.object({ needsApproval: z.boolean().optional() })).nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type SubAgentToolRelation = z.infer<typeof SubAgentToolRelation>;

export const SubAgentToolRelationCreate = z.strictObject({
  id: Rid,
  subAgentId: Rid,
  toolId: Rid,
  headers: HeaderMap.nullable().optional(),
  selectedTools: z.array(z.string().min(1)).nullable().optional(),
  toolPolicies: ToolPolicies.nullable().optional(),
  createdAt: IsoDateTime.optional(),
  updatedAt: IsoDateTime.optional(),
});
export type SubAgentToolRelationCreate = z.infer<typeof SubAgentToolRelationCreate>;
export const SubAgentToolRelationUpdate = SubAgentToolRelationCreate.partial();
export type SubAgentToolRelationUpdate = z.infer<typeof SubAgentToolRelationUpdate>;

const toolTags = ['Sub-agent tools'];
const toolBase = `${PA}/sub-agent-tool-relations`;
const ToolRelIdPath = AgentPath.extend({ id: Rid });

export const listSubAgentToolRelations = op({
  operationId: 'listSubAgentToolRelations',
  summary: 'List the tool relations of an agent',
  tags: toolTags,
  method: 'get',
  path: toolBase,
  subject: 'svc.management.sub-agent-tool-relations.list',
  permission: 'view',
  params: AgentPath,
  query: ListQuery.extend({ subAgentId: Rid.optional(), toolId: Rid.optional() }),
  reply: { status: 200, body: listReply(SubAgentToolRelation) },
});
export const createSubAgentToolRelation = op({
  operationId: 'createSubAgentToolRelation',
  summary: 'Let a sub-agent use a tool defined in the agent',
  tags: toolTags,
  method: 'post',
  path: toolBase,
  subject: 'svc.management.sub-agent-tool-relations.create',
  permission: 'edit',
  params: AgentPath,
  body: SubAgentToolRelationCreate,
  reply: { status: 201, body: dataReply(SubAgentToolRelation) },
  errors: [...errors, 409],
});
export const listSubAgentsOfTool = op({
  operationId: 'listSubAgentsOfTool',
  summary: 'List the relations of the sub-agents that use a tool',
  tags: toolTags,
  method: 'get',
  path: `${toolBase}/tool/{toolId}/sub-agents`,
  subject: 'svc.management.sub-agent-tool-relations.by-tool',
  permission: 'view',
  params: AgentPath.extend({ toolId: Rid }),
  query: ListQuery,
  reply: { status: 200, body: listReply(SubAgentToolRelation) },
});
export const getSubAgentToolRelation = op({
  operationId: 'getSubAgentToolRelation',
  summary: 'Get a tool relation',
  tags: toolTags,
  method: 'get',
  path: `${toolBase}/{id}`,
  subject: 'svc.management.sub-agent-tool-relations.get',
  permission: 'view',
  params: ToolRelIdPath,
  reply: { status: 200, body: dataReply(SubAgentToolRelation) },
});
export const updateSubAgentToolRelation = op({
  operationId: 'updateSubAgentToolRelation',
  summary: 'Update a tool relation',
  tags: toolTags,
  method: 'patch',
  path: `${toolBase}/{id}`,
  subject: 'svc.management.sub-agent-tool-relations.update',
  permission: 'edit',
  params: ToolRelIdPath,
  body: SubAgentToolRelationUpdate,
  reply: { status: 200, body: dataReply(SubAgentToolRelation) },
  errors: [...errors, 409],
});
export const deleteSubAgentToolRelation = op({
  operationId: 'deleteSubAgentToolRelation',
  summary: 'Remove a tool relation',
  tags: toolTags,
  method: 'delete',
  path: `${toolBase}/{id}`,
  subject: 'svc.management.sub-agent-tool-relations.delete',
  permission: 'edit',
  params: ToolRelIdPath,
  reply: { status: 204 },
  addition: true,
});

// ---- Data and artifact components ------------------------------------------------------------------------------

/** A component as listed per sub-agent. Components are not defined elsewhere, so the descriptive fields are null. */
export const ComponentRecord = z.object({
  id: z.string(),
  name: z.string().nullable(),
  description: z.string().nullable(),
  props: z.record(z.string(), z.unknown()).nullable(),
  render: z.record(z.string(), z.unknown()).nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type ComponentRecord = z.infer<typeof ComponentRecord>;

export const DataComponentAttachment = z.object({
  id: z.string(),
  subAgentId: z.string(),
  dataComponentId: z.string(),
  createdAt: z.string(),
});
export const ArtifactComponentAttachment = z.object({
  id: z.string(),
  subAgentId: z.string(),
  artifactComponentId: z.string(),
  createdAt: z.string(),
});

export const DataComponentAttach = z.strictObject({
  agentId: Id256.describe('Must equal the agentId of the path'),
  dataComponentId: Id256,
  subAgentId: Id256,
});
export const ArtifactComponentAttach = z.strictObject({
  agentId: Id256.describe('Must equal the agentId of the path'),
  artifactComponentId: Rid,
  subAgentId: Rid,
});

const legacy409 = { errors: [...errors, 409], errorBody: 'legacy' as const, legacyErrorStatuses: [409] };
const dcTags = ['Sub-agent data components'];
const dcBase = `${PA}/sub-agent-data-components`;
const DcPath = SubAgentPath.extend({ dataComponentId: Id256 });

export const attachDataComponent = op({
  operationId: 'attachDataComponent',
  summary: 'Attach a data component to a sub-agent',
  description: 'Already attached: 409 with the legacy error body.',
  tags: dcTags,
  method: 'post',
  path: dcBase,
  subject: 'svc.management.sub-agent-data-components.create',
  permission: 'edit',
  params: AgentPath,
  body: DataComponentAttach,
  reply: { status: 201, body: dataReply(DataComponentAttachment) },
  ...legacy409,
});
export const listSubAgentDataComponents = op({
  operationId: 'listSubAgentDataComponents',
  summary: 'List the data components of a sub-agent',
  tags: dcTags,
  method: 'get',
  path: `${dcBase}/agent/{subAgentId}`,
  subject: 'svc.management.sub-agent-data-components.list',
  permission: 'view',
  params: SubAgentPath,
  reply: { status: 200, body: dataReply(z.array(ComponentRecord)) },
});
export const removeDataComponent = op({
  operationId: 'removeDataComponent',
  summary: 'Detach a data component from a sub-agent',
  tags: dcTags,
  method: 'delete',
  path: `${dcBase}/agent/{subAgentId}/component/{dataComponentId}`,
  subject: 'svc.management.sub-agent-data-components.delete',
  permission: 'edit',
  params: DcPath,
  reply: { status: 200, body: MessageRemovedReply },
});
export const dataComponentAttached = op({
  operationId: 'dataComponentAttached',
  summary: 'Is a data component attached to a sub-agent',
  tags: dcTags,
  method: 'get',
  path: `${dcBase}/agent/{subAgentId}/component/{dataComponentId}/exists`,
  subject: 'svc.management.sub-agent-data-components.exists',
  permission: 'view',
  params: DcPath,
  reply: { status: 200, body: ExistsReply },
});
export const listSubAgentsOfDataComponent = op({
  operationId: 'listSubAgentsOfDataComponent',
  summary: 'List the sub-agents a data component is attached to',
  tags: dcTags,
  method: 'get',
  path: `${dcBase}/component/{dataComponentId}/agents`,
  subject: 'svc.management.sub-agent-data-components.by-component',
  permission: 'view',
  params: AgentPath.extend({ dataComponentId: Id256 }),
  reply: { status: 200, body: dataReply(z.array(ReverseLink)) },
});

const acTags = ['Sub-agent artifact components'];
const acBase = `${PA}/sub-agent-artifact-components`;
const AcPath = SubAgentPath.extend({ artifactComponentId: Rid });

export const attachArtifactComponent = op({
  operationId: 'attachArtifactComponent',
  summary: 'Attach an artifact component to a sub-agent',
  description: 'Already attached: 409 with the legacy error body.',
  tags: acTags,
  method: 'post',
  path: acBase,
  subject: 'svc.management.sub-agent-artifact-components.create',
  permission: 'edit',
  params: AgentPath,
  body: ArtifactComponentAttach,
  reply: { status: 201, body: dataReply(ArtifactComponentAttachment) },
  ...legacy409,
});
export const listSubAgentArtifactComponents = op({
  operationId: 'listSubAgentArtifactComponents',
  summary: 'List the artifact components of a sub-agent',
  tags: acTags,
  method: 'get',
  path: `${acBase}/agent/{subAgentId}`,
  subject: 'svc.management.sub-agent-artifact-components.list',
  permission: 'view',
  params: SubAgentPath,
  reply: { status: 200, body: dataReply(z.array(ComponentRecord)) },
});
export const removeArtifactComponent = op({
  operationId: 'removeArtifactComponent',
  summary: 'Detach an artifact component from a sub-agent',
  tags: acTags,
  method: 'delete',
  path: `${acBase}/agent/{subAgentId}/component/{artifactComponentId}`,
  subject: 'svc.management.sub-agent-artifact-components.delete',
  permission: 'edit',
  params: AcPath,
  reply: { status: 200, body: MessageRemovedReply },
});
export const artifactComponentAttached = op({
  operationId: 'artifactComponentAttached',
  summary: 'Is an artifact component attached to a sub-agent',
  tags: acTags,
  method: 'get',
  path: `${acBase}/agent/{subAgentId}/component/{artifactComponentId}/exists`,
  subject: 'svc.management.sub-agent-artifact-components.exists',
  permission: 'view',
  params: AcPath,
  reply: { status: 200, body: ExistsReply },
});
export const listSubAgentsOfArtifactComponent = op({
  operationId: 'listSubAgentsOfArtifactComponent',
  summary: 'List the sub-agents an artifact component is attached to',
  tags: acTags,
  method: 'get',
  path: `${acBase}/component/{artifactComponentId}/agents`,
  subject: 'svc.management.sub-agent-artifact-components.by-component',
  permission: 'view',
  params: AgentPath.extend({ artifactComponentId: Rid }),
  reply: { status: 200, body: dataReply(z.array(ReverseLink)) },
});

// ---- Function tools --------------------------------------------------------------------------------------------

export const FunctionToolAttachment = z.object({
  id: z.string(),
  subAgentId: z.string(),
  functionToolId: z.string(),
  toolPolicies: z.record(z.string(), z.object({ needsApproval: z.boolean().optional() })).nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type FunctionToolAttachment = z.infer<typeof FunctionToolAttachment>;

export const FunctionToolAttach = z.strictObject({
  functionToolId: Rid,
  subAgentId: Rid,
  toolPolicies: ToolPolicies.nullable().optional(),
});

export const SubAgentFunctionTool = z.object({
  id: z.string().describe('The function tool id'),
  name: z.string(),
  description: z.string().nullable(),
  functionId: z.string(),
  agentId: z.string(),
  relationshipId: z.string().describe('The attachment id'),
  createdAt: z.string(),
  updatedAt: z.string(),
});

const ftTags = ['Sub-agent function tools'];
const ftBase = `${PA}/sub-agent-function-tools`;
const FtPath = SubAgentPath.extend({ functionToolId: Rid });

export const attachFunctionTool = op({
  operationId: 'attachFunctionTool',
  summary: 'Attach a function tool (defined in the agent) to a sub-agent',
  description: 'Already attached: 409 with the legacy error body.',
  tags: ftTags,
  method: 'post',
  path: ftBase,
  subject: 'svc.management.sub-agent-function-tools.create',
  permission: 'edit',
  params: AgentPath,
  body: FunctionToolAttach,
  reply: { status: 201, body: dataReply(FunctionToolAttachment) },
  ...legacy409,
});
export const listSubAgentsOfFunctionTool = op({
  operationId: 'listSubAgentsOfFunctionTool',
  summary: 'List the sub-agents a function tool is attached to',
  tags: ftTags,
  method: 'get',
  path: `${ftBase}/function-tool/{functionToolId}/sub-agents`,
  subject: 'svc.management.sub-agent-function-tools.by-function-tool',
  permission: 'view',
  params: AgentPath.extend({ functionToolId: Rid }),
  reply: { status: 200, body: dataReply(z.array(ReverseLink)) },
});
export const listSubAgentFunctionTools = op({
  operationId: 'listSubAgentFunctionTools',
  summary: 'List the function tools of a sub-agent',
  tags: ftTags,
  method: 'get',
  path: `${ftBase}/sub-agent/{subAgentId}`,
  subject: 'svc.management.sub-agent-function-tools.list',
  permission: 'view',
  params: SubAgentPath,
  query: ListQuery,
  reply: { status: 200, body: listReply(SubAgentFunctionTool) },
});
export const removeFunctionTool = op({
  operationId: 'removeFunctionTool',
  summary: 'Detach a function tool from a sub-agent',
  tags: ftTags,
  method: 'delete',
  path: `${ftBase}/sub-agent/{subAgentId}/function-tool/{functionToolId}`,
  subject: 'svc.management.sub-agent-function-tools.delete',
  permission: 'edit',
  params: FtPath,
  reply: { status: 200, body: MessageRemovedReply },
});
export const functionToolAttached = op({
  operationId: 'functionToolAttached',
  summary: 'Is a function tool attached to a sub-agent',
  tags: ftTags,
  method: 'get',
  path: `${ftBase}/sub-agent/{subAgentId}/function-tool/{functionToolId}/exists`,
  subject: 'svc.management.sub-agent-function-tools.exists',
  permission: 'view',
  params: FtPath,
  reply: { status: 200, body: ExistsReply },
});
