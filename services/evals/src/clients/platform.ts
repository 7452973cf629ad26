import type { ServiceBus } from '@platform/bus';
import {
  getAgentDefinition,
  getFeedbackByIds,
  listAgentDefinitions,
  listConversationEvents,
  replaceAgentDefinition,
  listConversationFeedback,
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
  replaceAgentDefinition(
    scope: ProjectScope,
    agentId: string,
    definition: unknown,
    opts: ReplaceOptions,
  ): Promise<FullAgent>;
}

export interface ReplaceOptions {
  expectedUpdatedAt?: string;
  changeId?: string;
  dryRun?: boolean;
  branchName?: string;
}

export function platformClient(bus: ServiceBus): Platform {
  return {
    async conversationEvents(scope, conversationId) {
      return (await bus.callInternal(listConversationEvents, { ...scope, conversationId, limit: 500 })).events;
    },
    async conversationFeedback(scope, conversationId) {
      return (await bus.callInternal(listConversationFeedback, { ...scope, conversationId, limit: 100 })).feedback;
    },
    async feedbackByIds(scope, ids) {
      return ids.length === 0 ? [] : (await bus.callInternal(getFeedbackByIds, { ...scope, ids })).feedback;
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
        if (agents.length > max)
          throw new AppError(
            'unprocessable_entity',
            `The project has more than ${max} agents; an improvement branch copies at most ${max}`,
          );
        if (!page.next) return agents;
        after = page.next;
      }
    },
    async replaceAgentDefinition(scope, agentId, definition, opts) {
      return bus.callInternal(replaceAgentDefinition, { ...scope, agentId, definition, ...opts });
    },
  };
}
