import { anApiKey, client, eventually, projectPath, type Client } from '@platform/testkit';

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

export async function finishedRun(admin: Client, p: Project, runId: string, timeoutMs = 30_000) {
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

export async function resultsOf(admin: Client, p: Project, runId: string) {
  const res = await admin.get(`${runsPath(p)}/${runId}/results?limit=100`);
  if (res.status !== 200) throw new Error(`reading results failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data as Array<{ conversationId: string; evaluatorId: string; status: string; verdict: string | null; failedConditions: unknown[]; error: string | null; output: any }>;
}
