import { LOOKUP_AGENT_SUBJECT, LookupAgentRequest } from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';
import { validationError } from '@platform/problems';

/**
 * TEMPORARY STAND-IN, to be replaced on merge by the real agent lookup (another branch implements
 * LOOKUP_AGENT_SUBJECT against stored agents). It answers that every agent exists, named by its id, except
 * ids starting with `missing`, so the chat-app tests can run. Delete this file and its registration in
 * service.ts when the real handler lands.
 */
export function registerAgentLookupStub(bus: ServiceBus) {
  bus.serve(LOOKUP_AGENT_SUBJECT, async (wire) => {
    const parsed = LookupAgentRequest.safeParse(wire.body);
    if (!parsed.success) throw validationError(parsed.error, 'body');
    const { agentId } = parsed.data;
    const body = agentId.startsWith('missing') ? { exists: false } : { exists: true, agent: { id: agentId, name: agentId } };
    return { ok: true, status: 200, body };
  });
}
