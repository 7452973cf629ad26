import type { ServiceBus } from '@platform/bus';
import {
  getAgentDefinition,
  getFeedback,
  listAgentDefinitions,
  listConversationEvents,
  replaceAgentDefinition,
  listFeedback,
  type Feedback,
  type FullAgent,
  type ProjectScope,
  type RunEvent,
} from '@platform/contracts';
import { AppError } from '@platform/problems';

/** What evals asks other services over NATS: run events (events-ingest), feedback and agents (management). */
export interface Platform {
  conversationEvents(scope: ProjectScope, conversationId: string): Promise<RunEvent[]>;
  conversationFeedback(scope: ProjectScope, conversationId: string): Promise<Feedback[]>;
  /** The feedback records with these ids (missing ones are left out). */
  feedbackByIds(scope: ProjectScope, ids: string[]): Promise<Feedback[]>;
  /** null when the agent does not exist. */
  agentDefinition(scope: ProjectScope, agentId: string): Promise<FullAgent | null>;
  /** Every agent of the project with its full definition (paged requests), at most `max` (more: 422). */
  projectAgentDefinitions(scope: ProjectScope, max: number): Promise<FullAgent[]>;
  /** Replaces a live definition through management (which emits `agent.updated`); the internal call replaceAgentDefinition. */
  replaceAgentDefinition(scope: ProjectScope, agentId: string, definition: unknown, opts: ReplaceOptions): Promise<FullAgent>;
}

export interface ReplaceOptions {
  expectedUpdatedAt?: string;
  changeId?: string;
  dryRun?: boolean;
  branchName?: string;
}

const asAdmin = { principal: { kind: 'admin' as const, via: 'bearer' as const } };

export function platformClient(bus: ServiceBus): Platform {
  return {
    async conversationEvents(scope, conversationId) {
      return (await bus.callInternal(listConversationEvents, { ...scope, conversationId, limit: 500 })).events;
    },
    async conversationFeedback(scope, conversationId) {
      const res = await bus.call(listFeedback, { params: scope, query: { conversationId, limit: 100 } }, asAdmin);
      return res.body.data;
    },
    async feedbackByIds(scope, ids) {
      const found = await Promise.all(
        ids.map(async (id) => {
          try {
            return (await bus.call(getFeedback, { params: { ...scope, id } }, asAdmin)).body.data;
          } catch (err) {
            if (err instanceof AppError && err.status === 404) return null;
            throw err;
          }
        }),
      );
      return found.filter((f): f is Feedback => f !== null);
    },
    async agentDefinition(scope, agentId) {
      try {
        return await bus.callInternal(getAgentDefinition, { ...scope, agentId });
      } catch (err) {
        if (err instanceof AppError && err.status === 404) return null;
        throw err;
      }
    },
    async projectAgentDefinitions(scope, max) {
      const agents: FullAgent[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await bus.callInternal(listAgentDefinitions, { ...scope, after, limit: 50 });
        agents.push(...page.agents);
        if (agents.length > max) throw new AppError('unprocessable_entity', `The project has more than ${max} agents; an improvement branch copies at most ${max}`);
        if (!page.next) return agents;
        after = page.next;
      }
    },
    async replaceAgentDefinition(scope, agentId, definition, opts) {
      return bus.callInternal(replaceAgentDefinition, { ...scope, agentId, definition, ...opts });
    },
  };
}
