import { z } from 'zod';
import { auditConfig } from '@platform/config';

export const evalsConfig = z.object({
  // Empty counts as unset: docker-compose.yml passes `${LLM_BASE_URL:-}`, and an empty URL stopped evals at start.
  LLM_BASE_URL: z
    .preprocess((v) => (v === '' ? undefined : v), z.string().url().optional())
    .describe(
      'Base URL of an OpenAI-compatible API (`POST {LLM_BASE_URL}/chat/completions`) for llm_judge evaluators and the improvement assistant; unset: both answer "not configured"',
    ),
  LLM_API_KEY: z
    .preprocess((v) => (v === '' ? undefined : v), z.string().optional())
    .describe('Bearer token sent to the LLM endpoint (optional)'),
  LLM_MODEL: z
    .string()
    .min(1)
    .default('gpt-4o-mini')
    .describe('Model name sent to the LLM endpoint when an evaluator names none'),
  LLM_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(8_000)
    .describe(
      'Time one LLM call may take (keep it below EVAL_WORK_ACK_WAIT_MS: judge calls and assistant turns run on the work queue)',
    ),
  EVAL_WORK_CONCURRENCY: z.coerce
    .number()
    .int()
    .min(1)
    .default(4)
    .describe('Work-queue messages (evaluation items, improvement assistant turns) worked at once by one replica'),
  EVAL_WORK_ACK_WAIT_MS: z.coerce
    .number()
    .int()
    .min(500)
    .default(30_000)
    .describe(
      'How long a claimed evaluation item or assistant turn may take before the work queue hands it to another worker',
    ),
  IMPROVEMENT_MAX_AGENTS: z.coerce
    .number()
    .int()
    .min(1)
    .max(5000)
    .default(500)
    .describe('Most agents an improvement branch copies; triggering on a project with more answers 422'),
  MERGE_SWEEP_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(10_000)
    .describe(
      'How often merges of improvement branches left half-written (a process stopped mid-merge) are looked for and finished; a merge decided less than this long ago is left to its request',
    ),
  ...auditConfig.shape,
});
export type EvalsConfig = z.infer<typeof evalsConfig>;
