import {
  AgentPath,
  ProjectPath,
  createFullAgent,
  GET_AGENT_DEFINITION_SUBJECT,
  GetAgentDefinitionRequest,
  listAvailableAgents,
  LIST_AGENT_DEFINITIONS_SUBJECT,
  ListAgentDefinitionsRequest,
  LOOKUP_AGENT_SUBJECT,
  LookupAgentRequest,
  FullAgent,
  REPLACE_AGENT_DEFINITION_SUBJECT,
  ReplaceAgentDefinitionRequest,
} from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';
import { AppError, validationError } from '@platform/problems';
import type { z } from 'zod';
import { addFullAgent, agentDefinition, agentDefinitionsPage, availableAgents, lookupAgent, replaceFullAgent, type AgentDeps } from './agents';

function parseRequest<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const r = schema.safeParse(body);
  if (!r.success) throw validationError(r.error, 'body');
  return r.data;
}

/** Agent scope of an internal request; ids that could never be stored are simply unknown. */
function agentScope(req: { tenantId: string; projectId: string; agentId: string }) {
  const r = AgentPath.safeParse(req);
  return r.success ? r.data : null;
}

export function registerAgentHandlers(bus: ServiceBus, deps: AgentDeps) {
  bus.handle(createFullAgent, async ({ params, body }) => ({ data: await addFullAgent(deps, params, body) }));
  bus.handle(listAvailableAgents, async (_input, ctx) => ({ data: await availableAgents(deps, ctx.principal) }));

  /** Internal: does an agent exist (chatapp channel configs, evals)? */
  bus.serve(LOOKUP_AGENT_SUBJECT, async (wire) => {
    const scope = agentScope(parseRequest(LookupAgentRequest, wire.body));
    const body = scope ? await lookupAgent(deps, scope, scope.agentId) : { exists: false };
    return { ok: true, status: 200, body };
  });
  /** Internal: the stored full definition, or a 404 problem. */
  bus.serve(GET_AGENT_DEFINITION_SUBJECT, async (wire) => {
    const req = parseRequest(GetAgentDefinitionRequest, wire.body);
    const scope = agentScope(req);
    const body = await agentDefinition(deps, scope ?? req, req.agentId);
    return { ok: true, status: 200, body };
  });
  /** Internal (evals merging an improvement branch): replace the whole definition. */
  bus.serve(REPLACE_AGENT_DEFINITION_SUBJECT, async (wire) => {
    const req = parseRequest(ReplaceAgentDefinitionRequest, wire.body);
    const scope = agentScope(req);
    if (!scope) throw new AppError('not_found', `Agent "${req.agentId}" not found`);
    const r = FullAgent.safeParse(req.definition);
    if (!r.success) throw validationError(r.error, 'body', 'unprocessable_entity');
    const body = await replaceFullAgent(deps, { tenantId: scope.tenantId, projectId: scope.projectId }, scope.agentId, r.data, {
      expectedUpdatedAt: req.expectedUpdatedAt,
      changeId: req.changeId,
      dryRun: req.dryRun,
      branchName: req.branchName,
    });
    return { ok: true, status: 200, body };
  });
  /** Internal (evals copying a project onto an improvement branch): the full definitions, a page at a time. */
  bus.serve(LIST_AGENT_DEFINITIONS_SUBJECT, async (wire) => {
    const req = parseRequest(ListAgentDefinitionsRequest, wire.body);
    const scope = ProjectPath.safeParse(req);
    const body = scope.success ? await agentDefinitionsPage(deps, { tenantId: req.tenantId, projectId: req.projectId }, req.after, req.limit) : { agents: [], next: null };
    return { ok: true, status: 200, body };
  });
}
