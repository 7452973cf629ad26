import type {
  ContainsConfig,
  JsonSchemaConfig,
  LlmJudgeConfig,
  RegexConfig,
  Evaluator,
  FailedCondition,
  Feedback,
  RunEvent,
} from '@platform/contracts';
import type { z } from 'zod';
import type { ChatMessage, Llm } from '../clients/llm';
import { compileSchema } from './json-schema';
import { compilePattern, type Pattern } from './pattern';

export interface ConversationData {
  conversationId: string;
  events: RunEvent[];
  feedback: Feedback[];
}

export interface Judgement {
  status: 'completed' | 'error';
  verdict: 'passed' | 'failed' | 'no_criteria' | null;
  output: unknown;
  failedConditions: FailedCondition[];
  error: string | null;
}

const errorResult = (message: string): Judgement => ({
  status: 'error',
  verdict: null,
  output: null,
  failedConditions: [],
  error: message,
});

/** A dotted path into an object (`properties.text`). */
export function at(value: unknown, path: string): unknown {
  let cur: unknown = value;
  for (const key of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

const asText = (v: unknown) => (typeof v === 'string' ? v : v === undefined ? '' : JSON.stringify(v));

function selected(events: RunEvent[], cfg: { eventType?: string; field?: string }) {
  const field = cfg.field ?? 'properties';
  return events
    .filter((e) => !cfg.eventType || e.type === cfg.eventType)
    .map((e) => ({ eventId: e.id, field, value: at(e, field) }));
}

function presence(
  found: Array<{ eventId: string; value: unknown }>,
  expect: 'present' | 'absent',
  condition: Omit<FailedCondition, 'actual'>,
): Judgement {
  const passed = expect === 'present' ? found.length > 0 : found.length === 0;
  const output = { matches: found.map((f) => ({ eventId: f.eventId, value: f.value })) };
  if (passed) return { status: 'completed', verdict: 'passed', output, failedConditions: [], error: null };
  return {
    status: 'completed',
    verdict: 'failed',
    output,
    failedConditions: [{ ...condition, actual: expect === 'present' ? null : found[0]!.value }],
    error: null,
  };
}

function compare(actual: unknown, operator: string, expected: string | number | boolean): boolean {
  switch (operator) {
    case '=':
      return actual === expected;
    case '!=':
      return actual !== expected;
    default: {
      if (typeof actual !== 'number' || typeof expected !== 'number') return false;
      if (operator === '>') return actual > expected;
      if (operator === '>=') return actual >= expected;
      if (operator === '<') return actual < expected;
      return actual <= expected;
    }
  }
}

function transcript(data: ConversationData): string {
  return JSON.stringify({
    conversationId: data.conversationId,
    events: data.events.map((e) => ({
      type: e.type,
      createdAt: e.createdAt,
      messageId: e.messageId,
      properties: e.properties,
      userProperties: e.userProperties,
    })),
    feedback: data.feedback.map((f) => ({ type: f.type, details: f.details, messageId: f.messageId })),
  });
}

/** Runs one evaluator on one conversation. Rule kinds are pure; `llm_judge` asks the configured endpoint. */
export async function judge(evaluator: Evaluator, data: ConversationData, llm: Llm): Promise<Judgement> {
  switch (evaluator.kind) {
    case 'contains': {
      const cfg = evaluator.config as z.infer<typeof ContainsConfig>;
      const needle = cfg.caseSensitive ? cfg.value : cfg.value.toLowerCase();
      const found = selected(data.events, cfg).filter((s) =>
        (cfg.caseSensitive ? asText(s.value) : asText(s.value).toLowerCase()).includes(needle),
      );
      const expect = cfg.expect ?? 'present';
      return presence(found, expect, {
        field: cfg.field ?? 'properties',
        operator: expect === 'present' ? 'contains' : 'not_contains',
        value: cfg.value,
      });
    }
    case 'regex': {
      const cfg = evaluator.config as z.infer<typeof RegexConfig>;
      let re: Pattern;
      try {
        re = compilePattern(cfg.pattern, cfg.flags ?? '');
      } catch (err) {
        // Stored before patterns were held to RE2 (create refuses them now): a clear failed result, not a stall.
        return errorResult(`The pattern cannot be run: ${(err as Error).message}`);
      }
      const found = selected(data.events, cfg).filter((s) => re.test(asText(s.value)));
      const expect = cfg.expect ?? 'present';
      return presence(found, expect, {
        field: cfg.field ?? 'properties',
        operator: expect === 'present' ? 'matches' : 'not_matches',
        value: cfg.pattern,
      });
    }
    case 'json_schema': {
      const cfg = evaluator.config as z.infer<typeof JsonSchemaConfig>;
      const validate = compileSchema(cfg.schema);
      const values = selected(data.events, cfg);
      const field = cfg.field ?? 'properties';
      if (!values.length) {
        return {
          status: 'completed',
          verdict: 'failed',
          output: { checked: 0 },
          failedConditions: [{ field, operator: 'exists', value: cfg.eventType ?? 'any event', actual: null }],
          error: null,
        };
      }
      const failedConditions: FailedCondition[] = [];
      for (const v of values) {
        if (!validate(v.value)) {
          failedConditions.push({
            field,
            operator: 'matches_schema',
            value: (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; '),
            actual: v.value,
          });
        }
      }
      return {
        status: 'completed',
        verdict: failedConditions.length ? 'failed' : 'passed',
        output: { checked: values.length, invalid: failedConditions.length },
        failedConditions,
        error: null,
      };
    }
    case 'negative_feedback': {
      const negative = data.feedback.filter((f) => f.type === 'negative');
      const output = { negativeFeedbackIds: negative.map((f) => f.id) };
      if (!negative.length)
        return { status: 'completed', verdict: 'passed', output, failedConditions: [], error: null };
      return {
        status: 'completed',
        verdict: 'failed',
        output,
        failedConditions: [{ field: 'feedback.type', operator: '!=', value: 'negative', actual: 'negative' }],
        error: null,
      };
    }
    case 'llm_judge': {
      const cfg = evaluator.config as z.infer<typeof LlmJudgeConfig>;
      if (!llm.configured)
        return errorResult('LLM endpoint not configured (set LLM_BASE_URL): llm_judge evaluators cannot run');
      const messages: ChatMessage[] = [
        { role: 'system', content: `${cfg.prompt}\n\nAnswer with one JSON object.` },
        { role: 'user', content: transcript(data) },
      ];
      let output: Record<string, unknown>;
      try {
        output = await llm.completeJson(messages, cfg.model);
      } catch (err) {
        return errorResult((err as Error).message);
      }
      if (!cfg.passCriteria)
        return { status: 'completed', verdict: 'no_criteria', output, failedConditions: [], error: null };
      const results = cfg.passCriteria.conditions.map((c) => ({
        c,
        actual: at(output, c.field),
        ok: compare(at(output, c.field), c.operator, c.value),
      }));
      const passed = cfg.passCriteria.operator === 'and' ? results.every((r) => r.ok) : results.some((r) => r.ok);
      return {
        status: 'completed',
        verdict: passed ? 'passed' : 'failed',
        output,
        failedConditions: passed
          ? []
          : results
              .filter((r) => !r.ok)
              .map((r) => ({ field: r.c.field, operator: r.c.operator, value: r.c.value, actual: r.actual ?? null })),
        error: null,
      };
    }
    default:
      return errorResult(`unknown evaluator kind "${String(evaluator.kind)}"`);
  }
}
