import { z } from 'zod';

export const evalsConfig = z.object({
  LLM_BASE_URL: z
    .string()
    .url()
    .optional()
    .describe('Base URL of an OpenAI-compatible API (`POST {LLM_BASE_URL}/chat/completions`) for llm_judge evaluators and the improvement assistant; unset: both answer "not configured"'),
  LLM_API_KEY: z.string().optional().describe('Bearer token sent to the LLM endpoint (optional)'),
  LLM_MODEL: z.string().min(1).default('gpt-4o-mini').describe('Model name sent to the LLM endpoint when an evaluator names none'),
  LLM_TIMEOUT_MS: z.coerce.number().int().min(100).default(8_000).describe('Time one LLM call may take (keep the assistant below NATS_REQUEST_TIMEOUT_MS: it answers inside the request)'),
  EVAL_WORK_CONCURRENCY: z.coerce.number().int().min(1).default(4).describe('Evaluation items worked at once by one replica'),
  EVAL_WORK_ACK_WAIT_MS: z.coerce.number().int().min(500).default(30_000).describe('How long a claimed evaluation item may take before the work queue hands it to another worker'),
  OUTBOX_SWEEP_MS: z.coerce.number().int().min(100).default(5_000).describe('How often queued work items and evaluation.failed events left unpublished are republished'),
});
export type EvalsConfig = z.infer<typeof evalsConfig>;
