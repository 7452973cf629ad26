import {
  artifactComponentAttached,
  attachArtifactComponent,
  attachDataComponent,
  attachFunctionTool,
  createExternalAgentRelation,
  createSubAgentSkill,
  createSubAgentToolRelation,
  dataComponentAttached,
  deleteExternalAgentRelation,
  deleteSubAgentSkill,
  deleteSubAgentToolRelation,
  functionToolAttached,
  getExternalAgentRelation,
  getSubAgentToolRelation,
  listExternalAgentRelations,
  listSubAgentArtifactComponents,
  listSubAgentDataComponents,
  listSubAgentFunctionTools,
  listSubAgentSkills,
  listSubAgentsOfArtifactComponent,
  listSubAgentsOfDataComponent,
  listSubAgentsOfFunctionTool,
  listSubAgentsOfTool,
  listSubAgentToolRelations,
  paged,
  removeArtifactComponent,
  removeDataComponent,
  removeFunctionTool,
  updateExternalAgentRelation,
  updateSubAgentToolRelation,
} from '@platform/contracts';
import { reply, type ServiceBus } from '@platform/bus';
import type { AgentDeps } from '../domain/agents';
import * as a from '../domain/sub-agent-attachments';

export function registerSubAgentAttachmentHandlers(bus: ServiceBus, deps: AgentDeps) {
  // External agent relations
  bus.handle(listExternalAgentRelations, async ({ params, query }) =>
    paged(query, await a.listExternalAgentRelationsPage(deps, params, query)),
  );
  bus.handle(createExternalAgentRelation, async ({ params, body }) => ({
    data: await a.addExternalAgentRelation(deps, params, body),
  }));
  bus.handle(getExternalAgentRelation, async ({ params }) => ({
    data: await a.findExternalAgentRelation(deps, params, params.id),
  }));
  bus.handle(updateExternalAgentRelation, async ({ params, body }) => ({
    data: await a.changeExternalAgentRelation(deps, params, params.id, body),
  }));
  bus.handle(deleteExternalAgentRelation, async ({ params }) => a.removeExternalAgentRelation(deps, params, params.id));

  // Skills
  bus.handle(createSubAgentSkill, async ({ params, body }) => ({ data: await a.attachSkill(deps, params, body) }));
  bus.handle(listSubAgentSkills, async ({ params }) => ({ data: await a.subAgentSkills(deps, params) }));
  bus.handle(deleteSubAgentSkill, async ({ params }) => {
    await a.detachSkill(deps, params);
    return reply(204);
  });

  // Tool relations
  bus.handle(listSubAgentToolRelations, async ({ params, query }) =>
    paged(query, await a.listToolRelationsPage(deps, params, query)),
  );
  bus.handle(createSubAgentToolRelation, async ({ params, body }) => ({
    data: await a.addToolRelation(deps, params, body),
  }));
  bus.handle(listSubAgentsOfTool, async ({ params, query }) =>
    paged(query, await a.listToolRelationsPage(deps, params, { ...query, toolId: params.toolId })),
  );
  bus.handle(getSubAgentToolRelation, async ({ params }) => ({
    data: await a.getToolRelation(deps, params, params.id),
  }));
  bus.handle(updateSubAgentToolRelation, async ({ params, body }) => ({
    data: await a.changeToolRelation(deps, params, params.id, body),
  }));
  bus.handle(deleteSubAgentToolRelation, async ({ params }) => {
    await a.removeToolRelation(deps, params, params.id);
    return reply(204);
  });

  // Data components
  bus.handle(attachDataComponent, async ({ params, body }) => {
    const link = await a.attachComponent(deps, 'dataComponents', params, {
      ...body,
      componentId: body.dataComponentId,
    });
    return {
      data: { id: link.id, subAgentId: link.subAgentId, dataComponentId: link.componentId, createdAt: link.createdAt },
    };
  });
  bus.handle(listSubAgentDataComponents, async ({ params }) => ({
    data: await a.subAgentComponents(deps, 'dataComponents', params),
  }));
  bus.handle(removeDataComponent, async ({ params }) =>
    a.detachComponent(deps, 'dataComponents', params, params.dataComponentId),
  );
  bus.handle(dataComponentAttached, async ({ params }) =>
    a.componentAttached(deps, 'dataComponents', params, params.dataComponentId),
  );
  bus.handle(listSubAgentsOfDataComponent, async ({ params }) => ({
    data: await a.subAgentsOfComponent(deps, 'dataComponents', params, params.dataComponentId),
  }));

  // Artifact components
  bus.handle(attachArtifactComponent, async ({ params, body }) => {
    const link = await a.attachComponent(deps, 'artifactComponents', params, {
      ...body,
      componentId: body.artifactComponentId,
    });
    return {
      data: {
        id: link.id,
        subAgentId: link.subAgentId,
        artifactComponentId: link.componentId,
        createdAt: link.createdAt,
      },
    };
  });
  bus.handle(listSubAgentArtifactComponents, async ({ params }) => ({
    data: await a.subAgentComponents(deps, 'artifactComponents', params),
  }));
  bus.handle(removeArtifactComponent, async ({ params }) =>
    a.detachComponent(deps, 'artifactComponents', params, params.artifactComponentId),
  );
  bus.handle(artifactComponentAttached, async ({ params }) =>
    a.componentAttached(deps, 'artifactComponents', params, params.artifactComponentId),
  );
  bus.handle(listSubAgentsOfArtifactComponent, async ({ params }) => ({
    data: await a.subAgentsOfComponent(deps, 'artifactComponents', params, params.artifactComponentId),
  }));

  // Function tools
  bus.handle(attachFunctionTool, async ({ params, body }) => ({
    data: await a.attachFunctionTool(deps, params, body),
  }));
  bus.handle(listSubAgentsOfFunctionTool, async ({ params }) => ({
    data: await a.subAgentsOfFunctionTool(deps, params, params.functionToolId),
  }));
  bus.handle(listSubAgentFunctionTools, async ({ params, query }) =>
    paged(query, await a.subAgentFunctionToolsPage(deps, params, query)),
  );
  bus.handle(removeFunctionTool, async ({ params }) => a.detachFunctionTool(deps, params, params.functionToolId));
  bus.handle(functionToolAttached, async ({ params }) => a.functionToolAttachedTo(deps, params, params.functionToolId));
}
