import {
  agentCreated,
  agentDeleted,
  agentUpdated,
  pagination,
  pendingEvent,
  type AgentPath,
  type AvailableAgent,
  type ExternalAgentRelation,
  type FullAgent,
  type FunctionToolAttachment,
  type Principal,
  type ProjectScope,
  type SubAgent,
  type SubAgentSkill,
  type SubAgentToolRelation,
} from '@platform/contracts';
import { AppError, type FieldError } from '@platform/problems';
import { randomId } from '@platform/secrets';
import type { AgentRepo, StoredAgent } from '../data/agent.repo';
import type { SkillRepo } from '../data/skill.repo';
import type { WithLock } from '../data/entity-lock.store';

/**
 * Whether an agent is live (a live agent of the project, not deleted), for what is written bound to one (API keys,
 * triggers): checked before the write, and read again after it, since a deletion between the two may have run its
 * cascade before the write (docs/management.md, "Deleting an agent").
 */
export interface AgentLiveness {
  /** Before the write: may answer from a read of the last minute (the check after the write sees a deletion since). */
  seenLive(scope: AgentPath): Promise<boolean>;
  /** After the write: read from the database. */
  isLive(scope: AgentPath): Promise<boolean>;
}

export interface AgentDeps {
  agents: AgentRepo;
  skills: SkillRepo;
  /** Serializes read-modify-write of one skill (see data/entity-lock.ts). */
  lock: WithLock;
}

export const skillLockKey = (s: ProjectScope, skillId: string) => `skill:${s.tenantId}:${s.projectId}:${skillId}`;

export interface ComponentLink {
  id: string;
  subAgentId: string;
  componentId: string;
  createdAt: string;
}

/** The sub-agent attachments of an agent; the definition's sub-agent arrays are rendered from these. */
export interface Relations {
  externalAgents: ExternalAgentRelation[];
  skills: SubAgentSkill[];
  tools: SubAgentToolRelation[];
  dataComponents: ComponentLink[];
  artifactComponents: ComponentLink[];
  functionTools: FunctionToolAttachment[];
}

/** What the agent document's `body` holds: the definition without attachment arrays, and the attachments. */
export interface AgentBody {
  definition: FullAgent;
  relations: Relations;
}

export const has = (map: Record<string, unknown> | null | undefined, key: string) => !!map && Object.hasOwn(map, key);

export const agentNotFound = (agentId: string) => new AppError('not_found', `Agent "${agentId}" not found`);

export function readBody(doc: StoredAgent): AgentBody {
  return JSON.parse(doc.body) as AgentBody;
}

export function skillIdsOf(relations: Relations): string[] {
  return [...new Set(relations.skills.map((s) => s.skillId))];
}

/** The definition as users see it: the stored one with each sub-agent's attachment arrays filled from the relations. */
export function renderAgent(doc: StoredAgent, body: AgentBody = readBody(doc)): FullAgent {
  const { definition, relations } = body;
  const createdAt = new Date(doc.createdAt).toISOString();
  const updatedAt = new Date(doc.updatedAt).toISOString();
  const subAgents: Record<string, SubAgent> = {};
  for (const [key, sub] of Object.entries(definition.subAgents)) {
    const mine = <T extends { subAgentId: string }>(list: T[]) => list.filter((r) => r.subAgentId === key);
    const external = mine(relations.externalAgents).map((r) => r.externalAgentId);
    subAgents[key] = {
      ...sub,
      createdAt,
      updatedAt,
      canDelegateTo: [...new Set([...(sub.canDelegateTo ?? []), ...external])],
      canTransferTo: sub.canTransferTo ?? [],
      dataComponents: mine(relations.dataComponents).map((r) => r.componentId),
      artifactComponents: mine(relations.artifactComponents).map((r) => r.componentId),
      skills: mine(relations.skills)
        .sort((a, b) => a.index - b.index)
        .map((r) => ({ id: r.skillId, index: r.index, alwaysLoaded: r.alwaysLoaded })),
      canUse: [
        ...mine(relations.tools).map((r) => ({
          toolId: r.toolId,
          agentToolRelationId: r.id,
          ...(r.headers ? { headers: r.headers } : {}),
          ...(r.toolPolicies ? { toolPolicies: r.toolPolicies } : {}),
          ...(r.selectedTools ? { toolSelection: r.selectedTools } : {}),
        })),
        ...mine(relations.functionTools).map((r) => ({
          toolId: r.functionToolId,
          agentToolRelationId: r.id,
          ...(r.toolPolicies ? { toolPolicies: r.toolPolicies } : {}),
        })),
      ],
    };
  }
  return { ...definition, subAgents, createdAt, updatedAt };
}

export function agentSummary(doc: Pick<StoredAgent, 'id' | 'name'>, definition: FullAgent) {
  return { id: doc.id, name: doc.name, subAgentIds: Object.keys(definition.subAgents) };
}

/** Every reference inside a definition must name something the definition contains. */
export function referenceErrors(agent: FullAgent): FieldError[] {
  const errors: FieldError[] = [];
  const err = (pointer: string, detail: string) => errors.push({ pointer, detail });
  const maps = [
    'subAgents',
    'externalAgents',
    'functionTools',
    'functions',
    'teamAgents',
    'tools',
    'triggers',
  ] as const;
  for (const m of maps) {
    for (const [key, entry] of Object.entries((agent[m] ?? {}) as Record<string, { id?: string }>)) {
      if (entry.id !== undefined && entry.id !== key) err(`/${m}/${key}/id`, `must equal its key "${key}"`);
    }
  }
  const subs = agent.subAgents;
  if (agent.defaultSubAgentId && !has(subs, agent.defaultSubAgentId)) {
    err('/defaultSubAgentId', `names sub-agent "${agent.defaultSubAgentId}", which the agent does not contain`);
  }
  if (agent.contextConfigId && agent.contextConfig && agent.contextConfig.id !== agent.contextConfigId) {
    err('/contextConfigId', `must equal contextConfig.id ("${agent.contextConfig.id}")`);
  }
  for (const [key, fn] of Object.entries(agent.functionTools ?? {})) {
    if (!has(agent.functions, fn.functionId))
      err(`/functionTools/${key}/functionId`, `names function "${fn.functionId}", which the agent does not contain`);
  }
  const relationIds = new Set<string>();
  for (const [key, sub] of Object.entries(subs)) {
    const at = `/subAgents/${key}`;
    const dupes = (list: string[] | undefined, field: string) => {
      const seen = new Set<string>();
      (list ?? []).forEach((id, i) => {
        if (seen.has(id)) err(`${at}/${field}/${i}`, `"${id}" is listed twice`);
        seen.add(id);
      });
    };
    (sub.canTransferTo ?? []).forEach((id, i) => {
      if (!has(subs, id)) err(`${at}/canTransferTo/${i}`, `names sub-agent "${id}", which the agent does not contain`);
    });
    (sub.canDelegateTo ?? []).forEach((id, i) => {
      if (!has(subs, id) && !has(agent.externalAgents, id) && !has(agent.teamAgents, id)) {
        err(
          `${at}/canDelegateTo/${i}`,
          `names "${id}", which is none of the agent's sub-agents, external agents or team agents`,
        );
      }
    });
    (sub.canUse ?? []).forEach((use, i) => {
      if (!has(agent.tools, use.toolId) && !has(agent.functionTools, use.toolId)) {
        err(
          `${at}/canUse/${i}/toolId`,
          `names tool "${use.toolId}", which is none of the agent's tools or function tools`,
        );
      }
      if (use.agentToolRelationId) {
        if (relationIds.has(use.agentToolRelationId))
          err(`${at}/canUse/${i}/agentToolRelationId`, `"${use.agentToolRelationId}" is used twice`);
        relationIds.add(use.agentToolRelationId);
      }
    });
    dupes(
      (sub.canUse ?? []).map((u) => u.toolId),
      'canUse',
    );
    dupes(sub.canDelegateTo, 'canDelegateTo');
    dupes(sub.canTransferTo, 'canTransferTo');
    dupes(sub.dataComponents, 'dataComponents');
    dupes(sub.artifactComponents, 'artifactComponents');
    dupes(
      (sub.skills ?? []).map((s) => s.id),
      'skills',
    );
    const contract = sub.outputContract;
    (contract?.requireArtifact ?? []).forEach((id, i) => {
      if (!(sub.artifactComponents ?? []).includes(id))
        err(
          `${at}/outputContract/requireArtifact/${i}`,
          `names artifact component "${id}", which the sub-agent does not list`,
        );
    });
    (contract?.requireComponent ?? []).forEach((id, i) => {
      if (!(sub.dataComponents ?? []).includes(id))
        err(
          `${at}/outputContract/requireComponent/${i}`,
          `names data component "${id}", which the sub-agent does not list`,
        );
    });
  }
  return errors;
}

/** Splits a definition into the stored definition and its attachment records. */
export function splitDefinition(agent: FullAgent, now: string): AgentBody {
  const relations: Relations = {
    externalAgents: [],
    skills: [],
    tools: [],
    dataComponents: [],
    artifactComponents: [],
    functionTools: [],
  };
  const subAgents: Record<string, SubAgent> = {};
  for (const [key, sub] of Object.entries(agent.subAgents)) {
    const {
      canUse,
      skills,
      dataComponents,
      artifactComponents,
      canDelegateTo,
      createdAt: _c,
      updatedAt: _u,
      ...rest
    } = sub;
    const keptDelegates: string[] = [];
    for (const id of canDelegateTo ?? []) {
      if (has(agent.subAgents, id) || has(agent.teamAgents, id)) keptDelegates.push(id);
      else
        relations.externalAgents.push({
          id: randomId(16),
          subAgentId: key,
          externalAgentId: id,
          headers: null,
          createdAt: now,
          updatedAt: now,
        });
    }
    for (const use of canUse ?? []) {
      const id = use.agentToolRelationId ?? randomId(16);
      if (has(agent.tools, use.toolId)) {
        relations.tools.push({
          id,
          subAgentId: key,
          toolId: use.toolId,
          headers: use.headers ?? null,
          selectedTools: use.toolSelection ?? null,
          toolPolicies: use.toolPolicies ?? null,
          createdAt: now,
          updatedAt: now,
        });
      } else {
        relations.functionTools.push({
          id,
          subAgentId: key,
          functionToolId: use.toolId,
          toolPolicies: use.toolPolicies ?? null,
          createdAt: now,
          updatedAt: now,
        });
      }
    }
    for (const [i, s] of (skills ?? []).entries()) {
      relations.skills.push({
        id: randomId(16),
        subAgentId: key,
        skillId: s.id,
        index: s.index ?? i,
        alwaysLoaded: s.alwaysLoaded ?? false,
        createdAt: now,
        updatedAt: now,
      });
    }
    for (const c of dataComponents ?? [])
      relations.dataComponents.push({ id: randomId(16), subAgentId: key, componentId: c, createdAt: now });
    for (const c of artifactComponents ?? [])
      relations.artifactComponents.push({ id: randomId(16), subAgentId: key, componentId: c, createdAt: now });
    subAgents[key] = { ...rest, ...(canDelegateTo ? { canDelegateTo: keptDelegates } : {}) };
  }
  const { createdAt: _c, updatedAt: _u, ...definition } = agent;
  return { definition: { ...definition, subAgents }, relations };
}

/** 422 naming every reference of a full definition that points at nothing (inside it, or at the project's skills). */
async function assertReferencesExist(deps: AgentDeps, scope: ProjectScope, input: FullAgent): Promise<void> {
  const errors = referenceErrors(input);
  const skillRefs = Object.entries(input.subAgents).flatMap(([key, sub]) =>
    (sub.skills ?? []).map((s, i) => ({ id: s.id, pointer: `/subAgents/${key}/skills/${i}/id` })),
  );
  if (skillRefs.length) {
    const known = new Set(
      (await deps.skills.findMany(scope, [...new Set(skillRefs.map((s) => s.id))])).map((s) => s.id),
    );
    for (const ref of skillRefs)
      if (!known.has(ref.id))
        errors.push({ pointer: ref.pointer, detail: `names skill "${ref.id}", which does not exist in this project` });
  }
  if (errors.length) {
    throw new AppError(
      'unprocessable_entity',
      `The agent definition refers to things it does not contain (${errors[0]!.pointer}: ${errors[0]!.detail})`,
      { errors },
    );
  }
}

/** POST P/agent: checks every reference, then stores the whole definition in one write. */
export async function addFullAgent(deps: AgentDeps, scope: ProjectScope, input: FullAgent): Promise<FullAgent> {
  await assertReferencesExist(deps, scope, input);
  const now = new Date();
  const body = splitDefinition(input, now.toISOString());
  const doc = await deps.agents.insert(
    {
      id: input.id,
      tenantId: scope.tenantId,
      projectId: scope.projectId,
      name: input.name,
      body: JSON.stringify(body),
      skillIds: skillIdsOf(body.relations),
      createdAt: now,
      updatedAt: now,
    },
    [pendingEvent(agentCreated, randomId(24), scope, { agent: agentSummary(input, input) })],
  );
  if (!doc) throw new AppError('conflict', `An agent with id "${input.id}" already exists in this project`);
  return renderAgent(doc, body);
}

export interface ReplaceOptions {
  /** The `updatedAt` the caller based its change on (409 when the agent changed since). */
  expectedUpdatedAt?: string;
  /** An `If-Match` header (PUT PA): 412 when it names another version than the current one. */
  ifMatch?: string;
  /** Idempotency key: a replacement already written with this id is answered again, not repeated. */
  changeId?: string;
  /** Check only; write nothing. */
  dryRun?: boolean;
  /** The improvement branch being merged (for the event). */
  branchName?: string;
}

/** An agent as served, with the entity tag of its version. */
export interface VersionedAgent {
  agent: FullAgent;
  etag: string;
}

/** Attempts at writing the next revision when another writer keeps taking it (only without a precondition). */
const WRITE_ATTEMPTS = 5;

/**
 * Replaces an existing agent's whole definition: PUT PA, and the internal call an improvement merge uses, so both
 * write the same way and both bump the version. Checks references as create does. `ifMatch` (412) and
 * `expectedUpdatedAt` (409) guard against overwriting a change made since the caller read the agent. The next
 * revision is a unique insert, so of two concurrent replacements only one is written; it carries the `agent.updated`
 * event (outbox) and the `changeId`, so a retry of the same change finds it written and answers it. A replacement
 * with no precondition that loses the race is applied again on the fresh state (the last writer wins).
 */
export async function replaceFullAgent(
  deps: AgentDeps,
  scope: ProjectScope,
  agentId: string,
  input: FullAgent,
  opts: ReplaceOptions = {},
): Promise<VersionedAgent> {
  if (input.id !== agentId) {
    throw new AppError('unprocessable_entity', `The definition's id must be "${agentId}"`, {
      errors: [{ pointer: '/id', detail: `must equal "${agentId}"` }],
    });
  }
  for (let attempt = 1; ; attempt++) {
    const current = await deps.agents.findById(scope, agentId);
    if (!current) throw agentNotFound(agentId);
    if (opts.changeId && current.changeId === opts.changeId) return versioned(current);
    assertIfMatch(opts.ifMatch, current);
    if (opts.expectedUpdatedAt !== undefined && new Date(current.updatedAt).toISOString() !== opts.expectedUpdatedAt) {
      throw new AppError('conflict', `Agent "${agentId}" changed since ${opts.expectedUpdatedAt}`);
    }
    if (attempt === 1) await assertReferencesExist(deps, scope, input);
    if (opts.dryRun) return versioned(current);
    const now = new Date();
    const body = splitDefinition(input, now.toISOString());
    const event = pendingEvent(agentUpdated, randomId(24), scope, {
      agent: agentSummary({ id: agentId, name: input.name }, body.definition),
      change: { kind: 'definition', action: 'replaced', branchName: opts.branchName ?? null },
    });
    const set = {
      body: JSON.stringify(body),
      skillIds: skillIdsOf(body.relations),
      updatedAt: now,
      ...(opts.changeId ? { changeId: opts.changeId } : {}),
    };
    const written = await deps.agents.replaceBody({ ...current, name: input.name }, set, [event]);
    if (written) return { agent: renderAgent(written, body), etag: etagOf(written) };
    // Another writer took the next revision: the same change retried concurrently, or a real conflict.
    const now2 = opts.changeId ? await deps.agents.findById(scope, agentId) : null;
    if (now2 && now2.changeId === opts.changeId) return versioned(now2);
    if (hasPrecondition(opts.ifMatch)) throw staleVersion(agentId);
    if (opts.expectedUpdatedAt !== undefined || attempt >= WRITE_ATTEMPTS)
      throw new AppError('conflict', `Agent "${agentId}" changed concurrently; retry`);
  }
}

/**
 * DELETE PA. The tombstone revision is the decision (one unique insert, so a concurrent edit either lands before it
 * and is deleted with the agent, or loses); `agent.deleted` is in its outbox. Then the agent's triggers and the API
 * keys bound to it are removed; a crash in between leaves the tombstone marked, and the sweep finishes the job.
 */
export async function removeAgent(
  deps: AgentDeps & AgentCascadeDeps,
  scope: ProjectScope,
  agentId: string,
  ifMatch: string | undefined,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const current = await deps.agents.findById(scope, agentId);
    if (!current) throw agentNotFound(agentId);
    assertIfMatch(ifMatch, current);
    const event = pendingEvent(agentDeleted, randomId(24), scope, {
      agent: agentSummary(current, readBody(current).definition),
    });
    const tombstone = await deps.agents.insertTombstone(current, new Date(), [event]);
    if (tombstone) {
      await removeWhatNamedTheAgent(deps, tombstone);
      return;
    }
    if (hasPrecondition(ifMatch)) throw staleVersion(agentId);
    if (attempt >= WRITE_ATTEMPTS) throw new AppError('conflict', `Agent "${agentId}" changed concurrently; retry`);
  }
}

/** What deleting an agent removes besides the agent itself (see docs/management.md "Deleting an agent"). */
export interface AgentCascadeDeps {
  /** The agent's triggers (PA/triggers). */
  removeTriggers(scope: AgentPath): Promise<void>;
  /** Revokes every API key bound to the agent (each announces its revocation). */
  revokeKeys(scope: AgentPath): Promise<void>;
}

async function removeWhatNamedTheAgent(deps: AgentDeps & AgentCascadeDeps, tombstone: StoredAgent): Promise<void> {
  const agent = { tenantId: tombstone.tenantId, projectId: tombstone.projectId, agentId: tombstone.id };
  await Promise.all([deps.removeTriggers(agent), deps.revokeKeys(agent)]);
  await deps.agents.cascadeDone(tombstone);
}

/**
 * Finishes the deletions a stopped process left half done (at start and on a timer). When the id was used again by
 * a new agent since, its triggers and keys are the new agent's: the old tombstone is only marked done.
 */
export async function finishAgentDeletions(deps: AgentDeps & AgentCascadeDeps): Promise<number> {
  const pending = await deps.agents.pendingCascades(100);
  for (const tombstone of pending) {
    const latest = await deps.agents.latest(tombstone, tombstone.id);
    if (latest && latest.revision > tombstone.revision) await deps.agents.cascadeDone(tombstone);
    else await removeWhatNamedTheAgent(deps, tombstone);
  }
  return pending.length;
}

/** The strong entity tag of an agent version: its revision, which every change of the agent moves on. */
export function etagOf(doc: Pick<StoredAgent, 'revision'>): string {
  return `"${doc.revision}"`;
}

function versioned(doc: StoredAgent): VersionedAgent {
  return { agent: renderAgent(doc), etag: etagOf(doc) };
}

const hasPrecondition = (ifMatch: string | undefined) => ifMatch !== undefined && ifMatch.trim() !== '*';

const staleVersion = (agentId: string) =>
  new AppError(
    'precondition_failed',
    `Agent "${agentId}" changed since the version named in If-Match; read it again (GET) and repeat the change on the current version`,
  );

/**
 * RFC 9110 §13.1.1: `*` matches any current version; otherwise one of the listed entity tags must equal the current
 * one by strong comparison (a weak tag `W/"…"` never matches).
 */
function assertIfMatch(ifMatch: string | undefined, current: StoredAgent): void {
  if (!hasPrecondition(ifMatch)) return;
  const tags = ifMatch!.split(',').map((t) => t.trim());
  if (!tags.includes(etagOf(current))) throw staleVersion(current.id);
}

/** GET PA: the agent as served and its version. */
export async function readAgent(deps: AgentDeps, scope: ProjectScope, agentId: string): Promise<VersionedAgent> {
  const doc = await deps.agents.findById(scope, agentId);
  if (!doc) throw agentNotFound(agentId);
  return versioned(doc);
}

/** GET P/agents: a page of the project's agents, each as GET PA serves it. */
export async function listFullAgents(deps: AgentDeps, scope: ProjectScope, page: number, limit: number) {
  const { rows, total } = await deps.agents.list(scope, page, limit);
  return { data: rows.map((d) => renderAgent(d)), pagination: pagination(page, limit, total, rows.length) };
}

/** The definitions of a project's agents, one page (internal: evals copies them onto an improvement branch). */
export async function agentDefinitionsPage(
  deps: AgentDeps,
  scope: ProjectScope,
  after: string | undefined,
  limit: number,
) {
  const docs = await deps.agents.page(scope, after, limit + 1);
  const agents = docs.slice(0, limit).map((d) => renderAgent(d));
  return { agents, next: docs.length > limit ? agents[agents.length - 1]!.id : null };
}

export const AVAILABLE_AGENTS_LIMIT = 1000;

/** GET /manage/available-agents: the admin sees every tenant's agents, a tenant credential its own tenant's. */
export async function availableAgents(deps: AgentDeps, principal: Principal): Promise<AvailableAgent[]> {
  let filter: { tenantId?: string };
  if (principal.kind === 'admin') filter = {};
  else if (principal.kind === 'user') filter = { tenantId: principal.tenantId };
  else throw new AppError('forbidden', 'This credential cannot list agents');
  const rows = await deps.agents.available(filter, AVAILABLE_AGENTS_LIMIT);
  return rows.map((r) => ({ agentId: r.id, agentName: r.name, projectId: r.projectId, tenantId: r.tenantId }));
}

export async function lookupAgent(deps: AgentDeps, scope: ProjectScope, agentId: string) {
  const doc = await deps.agents.findById(scope, agentId);
  return doc ? { exists: true, agent: { id: doc.id, name: doc.name } } : { exists: false };
}

export async function agentDefinition(deps: AgentDeps, scope: ProjectScope, agentId: string): Promise<FullAgent> {
  const doc = await deps.agents.findById(scope, agentId);
  if (!doc) throw agentNotFound(agentId);
  return renderAgent(doc);
}
