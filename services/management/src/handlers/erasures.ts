import { deleteConversation, deleteProject, getErasure, reportErasure } from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';
import {
  findErasure,
  recordErasurePart,
  startConversationErasure,
  startProjectErasure,
  type ErasureDeps,
} from '../domain/erasures';

export function registerErasureHandlers(bus: ServiceBus, deps: ErasureDeps) {
  bus.handle(deleteConversation, async ({ params }) => ({
    data: await startConversationErasure(deps, params, params.conversationId),
  }));
  bus.handle(deleteProject, async ({ params }) => ({ data: await startProjectErasure(deps, params) }));
  bus.handle(getErasure, async ({ params }) => ({ data: await findErasure(deps, params, params.id) }));
  bus.serveInternal(reportErasure, async ({ tenantId, projectId, erasureId, service }) => ({
    status: (await recordErasurePart(deps, { tenantId, projectId }, erasureId, service)).status,
  }));
}
