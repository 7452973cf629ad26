import type { Connection } from '@platform/mongo';
import { outboxRelay, type OutboxRelay } from '@platform/outbox';
import type { Publisher, ServiceBus } from '@platform/bus';
import type { Redis } from 'ioredis';
import { entityLock } from './data/entity-lock';
import { agentModel } from './data/agent.model';
import { agentRepo } from './data/agent.repo';
import { skillRepo } from './data/skill.repo';
import { registerAgentHandlers } from './handlers/agents';
import { registerSkillHandlers } from './handlers/skills';
import { registerSubAgentAttachmentHandlers } from './handlers/sub-agent-attachments';

/** Agents, their sub-agent attachments and skills: repositories, outbox relays and handlers. Returns the relays to stop. */
export async function startAgentResources(bus: ServiceBus, db: Connection, redis: Redis, pub: Publisher): Promise<OutboxRelay[]> {
  const agentRelay = outboxRelay(agentModel(db), pub);
  const agents = agentRepo(db, agentRelay);
  const skills = skillRepo(db);
  await agentRelay.sweep();
  const deps = { agents, skills, lock: entityLock(redis) };
  registerAgentHandlers(bus, deps);
  registerSubAgentAttachmentHandlers(bus, deps);
  registerSkillHandlers(bus, deps);
  return [agentRelay];
}
