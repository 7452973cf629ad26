/**
 * A minimal client of an OpenAI-compatible chat-completions endpoint (`POST {LLM_BASE_URL}/chat/completions`).
 * Answers are requested as one JSON object (`response_format: {type: 'json_object'}`) and parsed.
 */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export class LlmNotConfigured extends Error {
  constructor() {
    super('LLM endpoint not configured (set LLM_BASE_URL)');
    this.name = 'LlmNotConfigured';
  }
}

export class LlmFailed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LlmFailed';
  }
}

export interface Llm {
  readonly configured: boolean;
  /** The model's answer parsed as a JSON object; throws LlmNotConfigured or LlmFailed. */
  completeJson(messages: ChatMessage[], model?: string): Promise<Record<string, unknown>>;
}

export function llmClient(opts: { baseUrl?: string; apiKey?: string; model: string; timeoutMs: number }): Llm {
  const baseUrl = opts.baseUrl?.replace(/\/+$/, '');
  return {
    configured: Boolean(baseUrl),
    async completeJson(messages, model) {
      if (!baseUrl) throw new LlmNotConfigured();
      let res: Response;
      try {
        res = await fetch(`${baseUrl}/chat/completions`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {}),
          },
          body: JSON.stringify({
            model: model ?? opts.model,
            messages,
            response_format: { type: 'json_object' },
            temperature: 0,
          }),
          signal: AbortSignal.timeout(opts.timeoutMs),
        });
      } catch (err) {
        throw new LlmFailed(
          `the LLM endpoint could not be reached (${(err as Error).name === 'TimeoutError' ? 'timed out' : (err as Error).message})`,
        );
      }
      const text = await res.text();
      if (!res.ok) throw new LlmFailed(`the LLM endpoint answered ${res.status}`);
      let content: unknown;
      try {
        content = (JSON.parse(text) as { choices?: Array<{ message?: { content?: unknown } }> }).choices?.[0]?.message
          ?.content;
      } catch {
        throw new LlmFailed('the LLM endpoint answered with something other than a chat completion');
      }
      if (typeof content !== 'string') throw new LlmFailed('the LLM answer has no message content');
      try {
        const parsed = JSON.parse(content) as unknown;
        if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
      } catch {
        /* reported below */
      }
      throw new LlmFailed('the LLM answer is not a JSON object');
    },
  };
}
