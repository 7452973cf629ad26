import {
  continueImprovement,
  createCopilotRun,
  getImprovementConversation,
  getImprovementDiff,
  listImprovements,
  mergeImprovement,
  rejectImprovement,
  triggerImprovement,
} from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';
import * as improvements from '../domain/improvements';

const scopeOf = (p: { tenantId: string; projectId: string }) => ({ tenantId: p.tenantId, projectId: p.projectId });

export function registerImprovementHandlers(bus: ServiceBus, deps: improvements.ImprovementDeps) {
  bus.handle(listImprovements, async ({ params }) => ({
    data: await improvements.listImprovements(deps, scopeOf(params)),
  }));
  bus.handle(createCopilotRun, async ({ params, body }) =>
    improvements.recordCopilotRun(deps, scopeOf(params), body.conversationId),
  );
  bus.handle(triggerImprovement, async ({ params, body }) =>
    improvements.triggerImprovement(deps, scopeOf(params), body.feedbackIds, body.additionalContext),
  );
  bus.handle(continueImprovement, async ({ params, body }) =>
    improvements.continueImprovement(deps, scopeOf(params), params.branchName, body.message),
  );
  bus.handle(getImprovementConversation, async ({ params }) =>
    improvements.improvementConversation(deps, scopeOf(params), params.branchName),
  );
  bus.handle(getImprovementDiff, async ({ params }) =>
    improvements.improvementDiff(deps, scopeOf(params), params.branchName),
  );
  bus.handle(mergeImprovement, async ({ params }) =>
    improvements.mergeImprovement(deps, scopeOf(params), params.branchName),
  );
  bus.handle(rejectImprovement, async ({ params }) =>
    improvements.rejectImprovement(deps, scopeOf(params), params.branchName),
  );
}
