import { LOOKUP_AGENT_SUBJECT, LookupAgentReply } from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';

/** Asks management whether an agent exists in a tenant's project (internal subject). */
export interface AgentDirectory {
  lookup(q: { tenantId: string; projectId: string; agentId: string }): Promise<{ id: string; name: string } | null>;
}

export function agentDirectory(bus: ServiceBus): AgentDirectory {
  return {
    async lookup(q) {
      const res = await bus.requestWire(LOOKUP_AGENT_SUBJECT, { principal: { kind: 'anonymous' }, body: q });
      const reply = LookupAgentReply.parse(res.body);
      if (!reply.exists) return null;
      return reply.agent ?? { id: q.agentId, name: q.agentId };
    },
  };
}
