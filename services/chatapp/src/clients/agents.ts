import { lookupAgent } from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';

/** Asks management whether an agent exists in a tenant's project (the internal call lookupAgent). */
export interface AgentDirectory {
  lookup(q: { tenantId: string; projectId: string; agentId: string }): Promise<{ id: string; name: string } | null>;
}

export function agentDirectory(bus: ServiceBus): AgentDirectory {
  return {
    async lookup(q) {
      const reply = await bus.callInternal(lookupAgent, q);
      if (!reply.exists) return null;
      return reply.agent ?? { id: q.agentId, name: q.agentId };
    },
  };
}
