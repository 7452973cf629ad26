import {
  agentUpdated,
  pendingEvent,
  type AgentPath,
  type ComponentRecord,
  type ExternalAgentRelationCreate,
  type ExternalAgentRelationUpdate,
  type SubAgentSkillCreate,
  type SubAgentToolRelationCreate,
  type SubAgentToolRelationUpdate,
} from '@platform/contracts';
import { AppError } from '@platform/problems';
import { randomId } from '@platform/secrets';
import type { StoredAgent } from '../data/agent.repo';
import { toSkill } from '../data/skill.repo';
import {
  agentNotFound,
  agentSummary,
  has,
  skillLockKey,
  readBody,
  skillIdsOf,
  type AgentBody,
  type AgentDeps,
  type ComponentLink,
  type Relations,
} from './agents';

type Kind = 'external-agent' | 'skill' | 'tool' | 'data-component' | 'artifact-component' | 'function-tool';
interface Change {
  kind: Kind;
  action: 'attached' | 'updated' | 'detached';
  subAgentId: string;
  targetId: string;
  relationId: string;
}

const subAgentNotFound = (subAgentId: string, agentId: string) =>
  new AppError('not_found', `Sub-agent "${subAgentId}" not found in agent "${agentId}"`);
const conflict = (detail: string) => new AppError('conflict', detail);

async function load(deps: AgentDeps, scope: AgentPath): Promise<{ doc: StoredAgent; body: AgentBody }> {
  const doc = await deps.agents.findById(scope, scope.agentId);
  if (!doc) throw agentNotFound(scope.agentId);
  return { doc, body: readBody(doc) };
}

function assertSubAgent(body: AgentBody, scope: AgentPath, subAgentId: string) {
  if (!has(body.definition.subAgents, subAgentId)) throw subAgentNotFound(subAgentId, scope.agentId);
}

/** Reads the agent, checks the sub-agent exists, returns the body (for read-only operations). */
async function loadForSubAgent(deps: AgentDeps, scope: AgentPath & { subAgentId: string }) {
  const loaded = await load(deps, scope);
  assertSubAgent(loaded.body, scope, scope.subAgentId);
  return loaded;
}

function assertAgentIdMatches(bodyAgentId: string, scope: AgentPath) {
  if (bodyAgentId !== scope.agentId) {
    throw new AppError(
      'bad_request',
      `Request body is invalid (/agentId: must equal the agent of the path, "${scope.agentId}")`,
      {
        errors: [{ pointer: '/agentId', detail: `must equal the agent of the path, "${scope.agentId}"` }],
      },
    );
  }
}

/**
 * Applies `change` to the latest revision's relations and inserts the next revision (retried from a fresh read when
 * another writer took that revision first). `change` validates against the state it is given and throws AppErrors.
 */
async function mutate<T>(
  deps: AgentDeps,
  scope: AgentPath,
  change: (body: AgentBody, now: string) => { result: T; event: Change },
): Promise<T> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const { doc, body } = await load(deps, scope);
    const now = new Date();
    const { result, event } = change(body, now.toISOString());
    const written = await deps.agents.replaceBody(
      doc,
      { body: JSON.stringify(body), skillIds: skillIdsOf(body.relations), updatedAt: now },
      [pendingEvent(agentUpdated, randomId(24), scope, { agent: agentSummary(doc, body.definition), change: event })],
    );
    if (written) return result;
  }
  throw conflict('The agent changed concurrently; retry');
}

function page<T>(rows: T[], q: { page: number; limit: number }) {
  return { rows: rows.slice((q.page - 1) * q.limit, q.page * q.limit), total: rows.length };
}

// ---- External agent relations ----------------------------------------------------------------------------------

type ExtScope = AgentPath & { subAgentId: string };

function findExternal(rel: Relations, scope: ExtScope, id: string) {
  const found = rel.externalAgents.find((r) => r.id === id && r.subAgentId === scope.subAgentId);
  if (!found) throw new AppError('not_found', `External agent relation "${id}" not found`);
  return found;
}

function assertExternalAgentDefined(body: AgentBody, scope: AgentPath, externalAgentId: string) {
  if (!has(body.definition.externalAgents, externalAgentId)) {
    throw new AppError('not_found', `External agent "${externalAgentId}" is not defined in agent "${scope.agentId}"`);
  }
}

export async function listExternalAgentRelationsPage(
  deps: AgentDeps,
  scope: ExtScope,
  q: { page: number; limit: number },
) {
  const { body } = await loadForSubAgent(deps, scope);
  return page(
    body.relations.externalAgents.filter((r) => r.subAgentId === scope.subAgentId),
    q,
  );
}

export async function addExternalAgentRelation(deps: AgentDeps, scope: ExtScope, input: ExternalAgentRelationCreate) {
  return mutate(deps, scope, (body, now) => {
    assertSubAgent(body, scope, scope.subAgentId);
    assertExternalAgentDefined(body, scope, input.externalAgentId);
    if (
      body.relations.externalAgents.some(
        (r) => r.subAgentId === scope.subAgentId && r.externalAgentId === input.externalAgentId,
      )
    ) {
      throw conflict(`External agent "${input.externalAgentId}" is already related to sub-agent "${scope.subAgentId}"`);
    }
    const rel = {
      id: randomId(16),
      subAgentId: scope.subAgentId,
      externalAgentId: input.externalAgentId,
      headers: input.headers ?? null,
      createdAt: input.createdAt ?? now,
      updatedAt: input.updatedAt ?? now,
    };
    body.relations.externalAgents.push(rel);
    return {
      result: rel,
      event: {
        kind: 'external-agent',
        action: 'attached',
        subAgentId: rel.subAgentId,
        targetId: rel.externalAgentId,
        relationId: rel.id,
      },
    };
  });
}

export async function findExternalAgentRelation(deps: AgentDeps, scope: ExtScope, id: string) {
  const { body } = await loadForSubAgent(deps, scope);
  return findExternal(body.relations, scope, id);
}

export async function changeExternalAgentRelation(
  deps: AgentDeps,
  scope: ExtScope,
  id: string,
  input: ExternalAgentRelationUpdate,
) {
  return mutate(deps, scope, (body, now) => {
    assertSubAgent(body, scope, scope.subAgentId);
    const rel = findExternal(body.relations, scope, id);
    const next = { ...rel };
    if (input.id !== undefined && input.id !== rel.id) {
      if (body.relations.externalAgents.some((r) => r.id === input.id))
        throw conflict(`An external agent relation with id "${input.id}" already exists`);
      next.id = input.id;
    }
    if (input.subAgentId !== undefined) {
      assertSubAgent(body, scope, input.subAgentId);
      next.subAgentId = input.subAgentId;
    }
    if (input.externalAgentId !== undefined) {
      assertExternalAgentDefined(body, scope, input.externalAgentId);
      next.externalAgentId = input.externalAgentId;
    }
    if (input.headers !== undefined) next.headers = input.headers;
    if (input.createdAt !== undefined) next.createdAt = input.createdAt;
    next.updatedAt = input.updatedAt ?? now;
    if (
      body.relations.externalAgents.some(
        (r) => r !== rel && r.subAgentId === next.subAgentId && r.externalAgentId === next.externalAgentId,
      )
    ) {
      throw conflict(`External agent "${next.externalAgentId}" is already related to sub-agent "${next.subAgentId}"`);
    }
    Object.assign(rel, next);
    return {
      result: rel,
      event: {
        kind: 'external-agent',
        action: 'updated',
        subAgentId: rel.subAgentId,
        targetId: rel.externalAgentId,
        relationId: rel.id,
      },
    };
  });
}

export async function removeExternalAgentRelation(deps: AgentDeps, scope: ExtScope, id: string) {
  return mutate(deps, scope, (body) => {
    assertSubAgent(body, scope, scope.subAgentId);
    const rel = findExternal(body.relations, scope, id);
    body.relations.externalAgents = body.relations.externalAgents.filter((r) => r !== rel);
    return {
      result: { message: 'External agent relation removed', removed: true },
      event: {
        kind: 'external-agent',
        action: 'detached',
        subAgentId: rel.subAgentId,
        targetId: rel.externalAgentId,
        relationId: rel.id,
      },
    };
  });
}

// ---- Sub-agent skills ------------------------------------------------------------------------------------------

export async function attachSkill(deps: AgentDeps, scope: AgentPath, input: SubAgentSkillCreate) {
  assertAgentIdMatches(input.agentId, scope);
  // Under the skill's lock, so a concurrent delete of the skill cannot slip between the check and the attach.
  return deps.lock(skillLockKey(scope, input.skillId), async () => {
    const skill = await deps.skills.findById(scope, input.skillId);
    if (!skill) throw new AppError('not_found', `Skill "${input.skillId}" not found`);
    return attachExistingSkill(deps, scope, input);
  });
}

function attachExistingSkill(deps: AgentDeps, scope: AgentPath, input: SubAgentSkillCreate) {
  return mutate(deps, scope, (body, now) => {
    assertSubAgent(body, scope, input.subAgentId);
    if (body.relations.skills.some((r) => r.subAgentId === input.subAgentId && r.skillId === input.skillId)) {
      throw conflict(`Skill "${input.skillId}" is already attached to sub-agent "${input.subAgentId}"`);
    }
    const rel = {
      id: randomId(16),
      subAgentId: input.subAgentId,
      skillId: input.skillId,
      index: input.index,
      alwaysLoaded: input.alwaysLoaded ?? false,
      createdAt: now,
      updatedAt: now,
    };
    body.relations.skills.push(rel);
    return {
      result: rel,
      event: {
        kind: 'skill',
        action: 'attached',
        subAgentId: rel.subAgentId,
        targetId: rel.skillId,
        relationId: rel.id,
      },
    };
  });
}

export async function subAgentSkills(deps: AgentDeps, scope: ExtScope) {
  const { body } = await loadForSubAgent(deps, scope);
  const links = body.relations.skills
    .filter((r) => r.subAgentId === scope.subAgentId)
    .sort((a, b) => a.index - b.index || a.createdAt.localeCompare(b.createdAt));
  const skills = new Map(
    (
      await deps.skills.findMany(
        scope,
        links.map((l) => l.skillId),
      )
    ).map((s) => [s.id, toSkill(s)]),
  );
  return links.flatMap((l) => {
    const skill = skills.get(l.skillId);
    // A skill deleted while attached (a narrow race) is left out rather than shown half.
    return skill
      ? [{ ...skill, alwaysLoaded: l.alwaysLoaded, index: l.index, subAgentId: l.subAgentId, subAgentSkillId: l.id }]
      : [];
  });
}

export async function detachSkill(deps: AgentDeps, scope: ExtScope & { skillId: string }) {
  await mutate(deps, scope, (body) => {
    assertSubAgent(body, scope, scope.subAgentId);
    const rel = body.relations.skills.find((r) => r.subAgentId === scope.subAgentId && r.skillId === scope.skillId);
    if (!rel)
      throw new AppError('not_found', `Skill "${scope.skillId}" is not attached to sub-agent "${scope.subAgentId}"`);
    body.relations.skills = body.relations.skills.filter((r) => r !== rel);
    return {
      result: undefined,
      event: {
        kind: 'skill',
        action: 'detached',
        subAgentId: rel.subAgentId,
        targetId: rel.skillId,
        relationId: rel.id,
      },
    };
  });
}

// ---- Tool relations --------------------------------------------------------------------------------------------

function findToolRelation(rel: Relations, id: string) {
  const found = rel.tools.find((r) => r.id === id);
  if (!found) throw new AppError('not_found', `Tool relation "${id}" not found`);
  return found;
}

function assertToolDefined(body: AgentBody, scope: AgentPath, toolId: string) {
  if (!has(body.definition.tools, toolId))
    throw new AppError('not_found', `Tool "${toolId}" is not defined in agent "${scope.agentId}"`);
}

export async function listToolRelationsPage(
  deps: AgentDeps,
  scope: AgentPath,
  q: { page: number; limit: number; subAgentId?: string; toolId?: string },
) {
  const { body } = await load(deps, scope);
  const rows = body.relations.tools.filter(
    (r) => (!q.subAgentId || r.subAgentId === q.subAgentId) && (!q.toolId || r.toolId === q.toolId),
  );
  return page(rows, q);
}

export async function addToolRelation(deps: AgentDeps, scope: AgentPath, input: SubAgentToolRelationCreate) {
  return mutate(deps, scope, (body, now) => {
    assertSubAgent(body, scope, input.subAgentId);
    assertToolDefined(body, scope, input.toolId);
    if (body.relations.tools.some((r) => r.id === input.id))
      throw conflict(`A tool relation with id "${input.id}" already exists`);
    if (body.relations.tools.some((r) => r.subAgentId === input.subAgentId && r.toolId === input.toolId)) {
      throw conflict(`Sub-agent "${input.subAgentId}" already uses tool "${input.toolId}"`);
    }
    const rel = {
      id: input.id,
      subAgentId: input.subAgentId,
      toolId: input.toolId,
      headers: input.headers ?? null,
      selectedTools: input.selectedTools ?? null,
      toolPolicies: input.toolPolicies ?? null,
      createdAt: input.createdAt ?? now,
      updatedAt: input.updatedAt ?? now,
    };
    body.relations.tools.push(rel);
    return {
      result: rel,
      event: { kind: 'tool', action: 'attached', subAgentId: rel.subAgentId, targetId: rel.toolId, relationId: rel.id },
    };
  });
}

export async function getToolRelation(deps: AgentDeps, scope: AgentPath, id: string) {
  const { body } = await load(deps, scope);
  return findToolRelation(body.relations, id);
}

export async function changeToolRelation(
  deps: AgentDeps,
  scope: AgentPath,
  id: string,
  input: SubAgentToolRelationUpdate,
) {
  return mutate(deps, scope, (body, now) => {
    const rel = findToolRelation(body.relations, id);
    const next = { ...rel };
    if (input.id !== undefined && input.id !== rel.id) {
      if (body.relations.tools.some((r) => r.id === input.id))
        throw conflict(`A tool relation with id "${input.id}" already exists`);
      next.id = input.id;
    }
    if (input.subAgentId !== undefined) {
      assertSubAgent(body, scope, input.subAgentId);
      next.subAgentId = input.subAgentId;
    }
    if (input.toolId !== undefined) {
      assertToolDefined(body, scope, input.toolId);
      next.toolId = input.toolId;
    }
    if (input.headers !== undefined) next.headers = input.headers;
    if (input.selectedTools !== undefined) next.selectedTools = input.selectedTools;
    if (input.toolPolicies !== undefined) next.toolPolicies = input.toolPolicies;
    if (input.createdAt !== undefined) next.createdAt = input.createdAt;
    next.updatedAt = input.updatedAt ?? now;
    if (body.relations.tools.some((r) => r !== rel && r.subAgentId === next.subAgentId && r.toolId === next.toolId)) {
      throw conflict(`Sub-agent "${next.subAgentId}" already uses tool "${next.toolId}"`);
    }
    Object.assign(rel, next);
    return {
      result: rel,
      event: { kind: 'tool', action: 'updated', subAgentId: rel.subAgentId, targetId: rel.toolId, relationId: rel.id },
    };
  });
}

export async function removeToolRelation(deps: AgentDeps, scope: AgentPath, id: string) {
  await mutate(deps, scope, (body) => {
    const rel = findToolRelation(body.relations, id);
    body.relations.tools = body.relations.tools.filter((r) => r !== rel);
    return {
      result: undefined,
      event: { kind: 'tool', action: 'detached', subAgentId: rel.subAgentId, targetId: rel.toolId, relationId: rel.id },
    };
  });
}

// ---- Data and artifact components ------------------------------------------------------------------------------

type ComponentKind = 'dataComponents' | 'artifactComponents';
const componentLabel = { dataComponents: 'Data component', artifactComponents: 'Artifact component' } as const;
const componentEvent = { dataComponents: 'data-component', artifactComponents: 'artifact-component' } as const;

export async function attachComponent(
  deps: AgentDeps,
  kind: ComponentKind,
  scope: AgentPath,
  input: { agentId: string; subAgentId: string; componentId: string },
) {
  assertAgentIdMatches(input.agentId, scope);
  return mutate(deps, scope, (body, now) => {
    assertSubAgent(body, scope, input.subAgentId);
    const links = body.relations[kind];
    if (links.some((l) => l.subAgentId === input.subAgentId && l.componentId === input.componentId)) {
      throw conflict(
        `${componentLabel[kind]} "${input.componentId}" is already attached to sub-agent "${input.subAgentId}"`,
      );
    }
    const link: ComponentLink = {
      id: randomId(16),
      subAgentId: input.subAgentId,
      componentId: input.componentId,
      createdAt: now,
    };
    links.push(link);
    return {
      result: link,
      event: {
        kind: componentEvent[kind],
        action: 'attached',
        subAgentId: link.subAgentId,
        targetId: link.componentId,
        relationId: link.id,
      },
    };
  });
}

/** Components have no record of their own here: the listing shows the id and the attachment's times, the rest null. */
export async function subAgentComponents(
  deps: AgentDeps,
  kind: ComponentKind,
  scope: ExtScope,
): Promise<ComponentRecord[]> {
  const { body } = await loadForSubAgent(deps, scope);
  return body.relations[kind]
    .filter((l) => l.subAgentId === scope.subAgentId)
    .map((l) => ({
      id: l.componentId,
      name: null,
      description: null,
      props: null,
      render: null,
      createdAt: l.createdAt,
      updatedAt: l.createdAt,
    }));
}

export async function detachComponent(deps: AgentDeps, kind: ComponentKind, scope: ExtScope, componentId: string) {
  return mutate(deps, scope, (body) => {
    assertSubAgent(body, scope, scope.subAgentId);
    const link = body.relations[kind].find((l) => l.subAgentId === scope.subAgentId && l.componentId === componentId);
    if (!link)
      throw new AppError(
        'not_found',
        `${componentLabel[kind]} "${componentId}" is not attached to sub-agent "${scope.subAgentId}"`,
      );
    body.relations[kind] = body.relations[kind].filter((l) => l !== link);
    return {
      result: { message: `${componentLabel[kind]} removed from sub-agent`, removed: true },
      event: {
        kind: componentEvent[kind],
        action: 'detached',
        subAgentId: link.subAgentId,
        targetId: link.componentId,
        relationId: link.id,
      },
    };
  });
}

export async function componentAttached(deps: AgentDeps, kind: ComponentKind, scope: ExtScope, componentId: string) {
  const { body } = await loadForSubAgent(deps, scope);
  return {
    exists: body.relations[kind].some((l) => l.subAgentId === scope.subAgentId && l.componentId === componentId),
  };
}

export async function subAgentsOfComponent(
  deps: AgentDeps,
  kind: ComponentKind,
  scope: AgentPath,
  componentId: string,
) {
  const { body } = await load(deps, scope);
  return body.relations[kind]
    .filter((l) => l.componentId === componentId)
    .map((l) => ({ createdAt: l.createdAt, subAgentId: l.subAgentId }));
}

// ---- Function tools --------------------------------------------------------------------------------------------

export async function attachFunctionTool(
  deps: AgentDeps,
  scope: AgentPath,
  input: {
    functionToolId: string;
    subAgentId: string;
    toolPolicies?: Record<string, { needsApproval?: boolean }> | null;
  },
) {
  return mutate(deps, scope, (body, now) => {
    assertSubAgent(body, scope, input.subAgentId);
    if (!has(body.definition.functionTools, input.functionToolId)) {
      throw new AppError(
        'not_found',
        `Function tool "${input.functionToolId}" is not defined in agent "${scope.agentId}"`,
      );
    }
    if (
      body.relations.functionTools.some(
        (r) => r.subAgentId === input.subAgentId && r.functionToolId === input.functionToolId,
      )
    ) {
      throw conflict(`Function tool "${input.functionToolId}" is already attached to sub-agent "${input.subAgentId}"`);
    }
    const rel = {
      id: randomId(16),
      subAgentId: input.subAgentId,
      functionToolId: input.functionToolId,
      toolPolicies: input.toolPolicies ?? null,
      createdAt: now,
      updatedAt: now,
    };
    body.relations.functionTools.push(rel);
    return {
      result: rel,
      event: {
        kind: 'function-tool',
        action: 'attached',
        subAgentId: rel.subAgentId,
        targetId: rel.functionToolId,
        relationId: rel.id,
      },
    };
  });
}

export async function subAgentsOfFunctionTool(deps: AgentDeps, scope: AgentPath, functionToolId: string) {
  const { body } = await load(deps, scope);
  return body.relations.functionTools
    .filter((r) => r.functionToolId === functionToolId)
    .map((r) => ({ createdAt: r.createdAt, subAgentId: r.subAgentId }));
}

export async function subAgentFunctionToolsPage(deps: AgentDeps, scope: ExtScope, q: { page: number; limit: number }) {
  const { body } = await loadForSubAgent(deps, scope);
  const defs = body.definition.functionTools ?? {};
  const rows = body.relations.functionTools
    .filter((r) => r.subAgentId === scope.subAgentId && has(defs, r.functionToolId))
    .map((r) => {
      const def = defs[r.functionToolId]!;
      return {
        id: r.functionToolId,
        name: def.name,
        description: def.description ?? null,
        functionId: def.functionId,
        agentId: scope.agentId,
        relationshipId: r.id,
        createdAt: r.createdAt,
        updatedAt: r.updatedAt,
      };
    });
  return page(rows, q);
}

export async function detachFunctionTool(deps: AgentDeps, scope: ExtScope, functionToolId: string) {
  return mutate(deps, scope, (body) => {
    assertSubAgent(body, scope, scope.subAgentId);
    const rel = body.relations.functionTools.find(
      (r) => r.subAgentId === scope.subAgentId && r.functionToolId === functionToolId,
    );
    if (!rel)
      throw new AppError(
        'not_found',
        `Function tool "${functionToolId}" is not attached to sub-agent "${scope.subAgentId}"`,
      );
    body.relations.functionTools = body.relations.functionTools.filter((r) => r !== rel);
    return {
      result: { message: 'Function tool removed from sub-agent', removed: true },
      event: {
        kind: 'function-tool',
        action: 'detached',
        subAgentId: rel.subAgentId,
        targetId: rel.functionToolId,
        relationId: rel.id,
      },
    };
  });
}

export async function functionToolAttachedTo(deps: AgentDeps, scope: ExtScope, functionToolId: string) {
  const { body } = await loadForSubAgent(deps, scope);
  return {
    exists: body.relations.functionTools.some(
      (r) => r.subAgentId === scope.subAgentId && r.functionToolId === functionToolId,
    ),
  };
}
