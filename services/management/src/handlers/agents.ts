import {
  AgentPath,
  ProjectPath,
  createFullAgent,
  deleteAgent,
  getAgent,
  listAgents,
  replaceAgent,
  getAgentDefinition,
  listAvailableAgents,
  listAgentDefinitions,
  lookupAgent as lookupAgentCall,
  FullAgent,
  replaceAgentDefinition,
} from '@platform/contracts';
import { reply, type ServiceBus } from '@platform/bus';
import { AppError, validationError } from '@platform/problems';
import {
  addFullAgent,
  agentDefinition,
  agentDefinitionsPage,
  availableAgents,
  listFullAgents,
  lookupAgent,
  readAgent,
  removeAgent,
  replaceFullAgent,
  type AgentCascadeDeps,
  type AgentDeps,
} from '../domain/agents';

/** Agent scope of an internal request; ids that could never be stored are simply unknown. */
function agentScope(req: { tenantId: string; projectId: string; agentId: string }) {
  const r = AgentPath.safeParse(req);
  return r.success ? r.data : null;
}

const projectOf = (p: { tenantId: string; projectId: string }) => ({ tenantId: p.tenantId, projectId: p.projectId });

export function registerAgentHandlers(bus: ServiceBus, deps: AgentDeps & AgentCascadeDeps) {
  bus.handle(createFullAgent, async ({ params, body }) => ({ data: await addFullAgent(deps, params, body) }));
  bus.handle(listAgents, async ({ params, query }) => listFullAgents(deps, params, query.page, query.limit));
  bus.handle(getAgent, async ({ params }) => {
    const { agent, etag } = await readAgent(deps, projectOf(params), params.agentId);
    return reply(200, { data: agent }, { etag });
  });
  bus.handle(replaceAgent, async ({ params, body }, ctx) => {
    const { agent, etag } = await replaceFullAgent(deps, projectOf(params), params.agentId, body, {
      ifMatch: ctx.meta.headers?.['if-match'],
    });
    return reply(200, { data: agent }, { etag });
  });
  bus.handle(deleteAgent, async ({ params }, ctx) => {
    await removeAgent(deps, projectOf(params), params.agentId, ctx.meta.headers?.['if-match']);
    return reply(204);
  });
  bus.handle(listAvailableAgents, async (_input, ctx) => ({ data: await availableAgents(deps, ctx.principal) }));

  /** Internal: does an agent exist (chatapp channel configs, evals)? */
  bus.serveInternal(lookupAgentCall, async (req) => {
    const scope = agentScope(req);
    return scope ? await lookupAgent(deps, scope, scope.agentId) : { exists: false };
  });
  /** Internal: the stored full definition, or a 404 problem. */
  bus.serveInternal(getAgentDefinition, async (req) => agentDefinition(deps, agentScope(req) ?? req, req.agentId));
  /** Internal (evals merging an improvement branch): replace the whole definition. */
  bus.serveInternal(replaceAgentDefinition, async (req) => {
    const scope = agentScope(req);
    if (!scope) throw new AppError('not_found', `Agent "${req.agentId}" not found`);
    const r = FullAgent.safeParse(req.definition);
    if (!r.success) throw validationError(r.error, 'body', 'unprocessable_entity');
    const replaced = await replaceFullAgent(deps, projectOf(scope), scope.agentId, r.data, {
      expectedUpdatedAt: req.expectedUpdatedAt,
      changeId: req.changeId,
      dryRun: req.dryRun,
      branchName: req.branchName,
    });
    return replaced.agent;
  });
  /** Internal (evals copying a project onto an improvement branch): the full definitions, a page at a time. */
  bus.serveInternal(listAgentDefinitions, async (req) => {
    const scope = ProjectPath.safeParse(req);
    return scope.success
      ? agentDefinitionsPage(deps, { tenantId: req.tenantId, projectId: req.projectId }, req.after, req.limit)
      : { agents: [], next: null };
  });
}
