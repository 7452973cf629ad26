import { defineService } from '@platform/runtime';
import { startAuditLog } from '@platform/audit';
import { eraseProjectDocuments } from '@platform/mongo';
import { startErasureWorker } from '@platform/bus';
import { evalsConfig } from './config';
import { datasetItemRepo } from './data/dataset-item.repo';
import { evaluatorRepo } from './data/evaluator.repo';
import { evaluationRepo } from './data/evaluation.repo';
import { improvementRepo } from './data/improvement.repo';
import { platformClient } from './clients/platform';
import { llmClient } from './clients/llm';
import { registerDatasetItemHandlers } from './handlers/dataset-items';
import { registerEvaluatorHandlers } from './handlers/evaluators';
import { registerEvaluationHandlers } from './handlers/evaluations';
import { registerImprovementHandlers } from './handlers/improvements';
import { startEvaluationWorker } from './handlers/work';
import { resumeMerges } from './domain/improvements';
import { getLogger } from '@platform/logger';

const log = getLogger('evals');

/** Dataset items, evaluators, evaluation runs and improvement assistant turns (JetStream work queue), improvement branches. */
export const evals = defineService({
  name: 'evals',
  config: evalsConfig,
  async start({ config, bus, db, outbox, nc }) {
    const runs = evaluationRepo(db, outbox);
    const items = datasetItemRepo(db);
    const evaluators = evaluatorRepo(db);
    const improvements = improvementRepo(db, outbox);
    const platform = platformClient(bus);
    const llm = llmClient({
      baseUrl: config.LLM_BASE_URL,
      apiKey: config.LLM_API_KEY,
      model: config.LLM_MODEL,
      timeoutMs: config.LLM_TIMEOUT_MS,
    });

    const evaluationDeps = { runs, evaluators, platform, llm };
    // Every change served under /manage is audited here and copied into the tenant's log by management (libs/audit).
    const audit = await startAuditLog({ bus, db, outbox, settleSeconds: config.AUDIT_PENDING_SETTLE_SECONDS });
    registerDatasetItemHandlers(bus, { items });
    registerEvaluatorHandlers(bus, { evaluators });
    registerEvaluationHandlers(bus, evaluationDeps);
    const improvementDeps = { improvements, platform, llm, maxAgents: config.IMPROVEMENT_MAX_AGENTS };
    registerImprovementHandlers(bus, improvementDeps);
    const worker = await startEvaluationWorker(
      nc,
      { evaluations: evaluationDeps, improvements: improvementDeps },
      { concurrency: config.EVAL_WORK_CONCURRENCY, ackWaitMs: config.EVAL_WORK_ACK_WAIT_MS },
    );
    const erasure = await startErasureWorker(nc, bus, 'evals', {
      eraseProject: (scope) => eraseProjectDocuments(db, scope),
      eraseConversation: (scope, conversationId) => runs.eraseConversation(scope, conversationId),
    });
    // Merges a stopped process left half-written are finished here (at start and on a timer).
    let sweeping: Promise<unknown> = resumeMerges(improvementDeps, config.MERGE_SWEEP_MS).catch((err: unknown) =>
      log.warn({ err }, 'merge sweep failed'),
    );
    const mergeSweep = setInterval(() => {
      sweeping = sweeping
        .then(() => resumeMerges(improvementDeps, config.MERGE_SWEEP_MS))
        .catch((err: unknown) => log.warn({ err }, 'merge sweep failed'));
    }, config.MERGE_SWEEP_MS);
    mergeSweep.unref();
    return {
      async stop() {
        clearInterval(mergeSweep);
        await Promise.all([worker.stop(), erasure.stop()]);
        await sweeping;
        await audit.stop();
      },
    };
  },
});
