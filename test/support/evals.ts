import {
  anApiKey,
  client,
  eventually,
  projectPath,
  startFakeLlm,
  startPrivateStack,
  type Client,
} from '@platform/testkit';

type Project = { tenantId: string; projectId: string };

export const evalsPath = (p: Project) => `/evals/tenants/${p.tenantId}/projects/${p.projectId}`;
export const evaluatorsPath = (p: Project) => `${projectPath(p)}/evals/evaluators`;
export const runsPath = (p: Project) => `${projectPath(p)}/evals/evaluation-runs`;
export const improvementsPath = (p: Project) => `${projectPath(p)}/improvements`;

/** Records a conversation's run events through the run API (with an API key of `agentId`). */
export async function aConversation(
  gatewayUrl: string,
  admin: Client,
  p: Project,
  conversationId: string,
  events: Array<{ type: string; properties?: Record<string, unknown>; userProperties?: Record<string, unknown> }>,
  agentId = 'agent-1',
) {
  const { key } = await anApiKey(admin, p, { agentId });
  const run = client(gatewayUrl, key);
  for (const e of events) {
    const res = await run.post('/run/v1/events', { ...e, conversationId });
    if (res.status !== 201) throw new Error(`recording an event failed: ${res.status} ${JSON.stringify(res.body)}`);
  }
}

export async function anEvaluator(admin: Client, p: Project, body: Record<string, unknown>) {
  const res = await admin.post(evaluatorsPath(p), { name: 'check', ...body });
  if (res.status !== 201) throw new Error(`creating an evaluator failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data as { id: string; name: string };
}

export async function aFeedback(admin: Client, p: Project, body: Record<string, unknown>) {
  const res = await admin.post(`${projectPath(p)}/feedback`, body);
  if (res.status !== 201) throw new Error(`creating feedback failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data as { id: string };
}

export async function finishedRun(admin: Client, p: Project, runId: string, timeoutMs = 50_000) {
  return eventually(
    async () => {
      const res = await admin.get(`${runsPath(p)}/${runId}`);
      return res.status === 200 && ['completed', 'failed'].includes(res.body.data.status) ? res.body.data : undefined;
    },
    `evaluation run ${runId} to finish`,
    timeoutMs,
    150,
  );
}

/** The branch conversation once the assistant has answered the latest message (status no longer `running`). */
export async function settledBranch(admin: Client, p: Project, branchName: string, timeoutMs = 50_000) {
  return eventually(
    async () => {
      const res = await admin.get(`${improvementsPath(p)}/${branchName}/conversation`);
      return res.status === 200 && res.body.status !== 'running' ? res.body : undefined;
    },
    `improvement branch ${branchName} to settle`,
    timeoutMs,
    100,
  );
}

export async function resultsOf(admin: Client, p: Project, runId: string) {
  const res = await admin.get(`${runsPath(p)}/${runId}/results?limit=100`);
  if (res.status !== 200) throw new Error(`reading results failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data as Array<{
    conversationId: string;
    evaluatorId: string;
    status: string;
    verdict: string | null;
    failedConditions: unknown[];
    error: string | null;
    output: any;
  }>;
}

/**
 * A small private stack (own nats-server; management, run-auth, events-ingest, evals, webhook-dispatcher and the
 * gateway) whose evals talks to a fake OpenAI-compatible LLM started here, works one item at a time, re-offers an
 * unacknowledged item after 3 s (so a killed worker's item comes back quickly) and looks for half-written merges every
 * second.
 */
export async function startEvalsStack(name: string) {
  const llm = await startFakeLlm();
  try {
    const stack = await startPrivateStack({
      name,
      services: ['management', 'run-auth', 'events-ingest', 'evals', 'webhook-dispatcher'],
      env: {
        ANALYTICS_PORT: '0',
        LLM_BASE_URL: llm.baseUrl,
        LLM_API_KEY: 'sk-fake-llm',
        LLM_MODEL: 'fake-model',
        EVAL_WORK_CONCURRENCY: '1',
        EVAL_WORK_ACK_WAIT_MS: '3000',
        MERGE_SWEEP_MS: '1000',
        ALLOW_LOOPBACK_WEBHOOKS: 'true',
        WEBHOOK_CAP_WAIT_MS: '100',
      },
    });
    stack.onStop(() => llm.close());
    return {
      stack,
      llm,
      natsUrl: stack.natsUrl,
      admin: stack.admin,
      evals: () => stack.process('evals'),
      stop: stack.stop,
    };
  } catch (err) {
    await llm.close();
    throw err;
  }
}
