import { z } from 'zod';
import { createOperation, deleteOperation, getOperation, listOperation, updateOperation } from '../record-operations';
import { Rid, ProjectPath, IdPath, JsonObject } from '../common';
import { text } from '../text';

/**
 * Evaluator kinds. Rule kinds run on the conversation's recorded run events (events-ingest) and feedback
 * (management) without any outside service; `llm_judge` asks the configured OpenAI-compatible endpoint.
 * `eventType` narrows the events looked at; `field` is a dotted path into an event (default `properties`,
 * non-string values are compared as JSON text).
 */
const EventSelector = {
  eventType: z
    .string()
    .min(1)
    .max(256)
    .optional()
    .describe('Only events of this type (default: every event of the conversation)'),
  field: z
    .string()
    .min(1)
    .max(256)
    .regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, 'must be a dotted path such as properties.text')
    .optional()
    .describe('Dotted path into each event (default `properties`)'),
};

export const ContainsConfig = z.strictObject({
  ...EventSelector,
  value: text({ min: 1, max: 10_000 }).describe('Text to look for'),
  caseSensitive: z.boolean().optional().describe('Default false'),
  expect: z
    .enum(['present', 'absent'])
    .optional()
    .describe('`present` (default): passes when some event contains the text; `absent`: passes when none does'),
});

export const RegexConfig = z.strictObject({
  ...EventSelector,
  pattern: z
    .string()
    .min(1)
    .max(1000)
    .describe('Regular expression in RE2 syntax (run in linear time; no lookaround, no backreferences)'),
  flags: z
    .string()
    .regex(/^[imsu]*$/, 'may only contain the flags i, m, s, u')
    .optional(),
  expect: z
    .enum(['present', 'absent'])
    .optional()
    .describe('`present` (default): passes when some event matches; `absent`: passes when none does'),
});

export const JsonSchemaConfig = z.strictObject({
  eventType: EventSelector.eventType,
  field: EventSelector.field,
  schema: JsonObject.describe(
    'JSON Schema (draft 2020-12 unless `$schema` says draft-07 or 2019-09) every selected value must satisfy',
  ),
});

export const NegativeFeedbackConfig = z.strictObject({});

export const PassCondition = z.strictObject({
  field: z.string().min(1).max(256).describe("Dotted path into the judge's JSON output"),
  operator: z.enum(['=', '!=', '>', '>=', '<', '<=']),
  value: z.union([z.number(), z.boolean(), z.string()]),
});
export const PassCriteria = z.strictObject({
  operator: z.enum(['and', 'or']),
  conditions: z.array(PassCondition).min(1).max(50),
});

export const LlmJudgeConfig = z.strictObject({
  prompt: text({ min: 1, max: 50_000 }).describe('Instructions for the judge; it answers with one JSON object'),
  model: z.string().min(1).max(256).optional().describe('Model name sent to the endpoint (default: LLM_MODEL)'),
  passCriteria: PassCriteria.optional().describe(
    "Conditions on the judge's output; without them the verdict is `no_criteria`",
  ),
});

const kinds = {
  contains: ContainsConfig,
  regex: RegexConfig,
  json_schema: JsonSchemaConfig,
  negative_feedback: NegativeFeedbackConfig,
  llm_judge: LlmJudgeConfig,
} as const;
export const EvaluatorKind = z.enum(['contains', 'regex', 'json_schema', 'negative_feedback', 'llm_judge']);
export type EvaluatorKind = z.infer<typeof EvaluatorKind>;

const common = {
  name: text({ min: 1, max: 256 }),
  description: text({ max: 10_000 }).nullable().optional(),
  agentIds: z
    .array(Rid)
    .max(100)
    .optional()
    .describe('Agents whose conversations it applies to; omitted or empty means all agents'),
};

export const EvaluatorCreate = z.discriminatedUnion('kind', [
  z.strictObject({ id: Rid.optional(), ...common, kind: z.literal('contains'), config: kinds.contains }),
  z.strictObject({ id: Rid.optional(), ...common, kind: z.literal('regex'), config: kinds.regex }),
  z.strictObject({ id: Rid.optional(), ...common, kind: z.literal('json_schema'), config: kinds.json_schema }),
  z.strictObject({
    id: Rid.optional(),
    ...common,
    kind: z.literal('negative_feedback'),
    config: kinds.negative_feedback.optional().default({}),
  }),
  z.strictObject({ id: Rid.optional(), ...common, kind: z.literal('llm_judge'), config: kinds.llm_judge }),
]);
export type EvaluatorCreate = z.infer<typeof EvaluatorCreate>;

/** `kind` cannot change; `config`, when given, replaces the whole config and is checked against the stored kind. */
export const EvaluatorUpdate = z
  .strictObject({
    name: common.name.optional(),
    description: common.description,
    agentIds: common.agentIds,
    config: JsonObject.optional(),
  })
  .refine((b) => Object.keys(b).length > 0, { message: 'give at least one field to change' });
export type EvaluatorUpdate = z.infer<typeof EvaluatorUpdate>;

export function evaluatorConfigSchema(kind: EvaluatorKind): z.ZodType {
  return kinds[kind];
}

export const Evaluator = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  kind: EvaluatorKind,
  config: JsonObject,
  agentIds: z.array(z.string()),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Evaluator = z.infer<typeof Evaluator>;

const tags = ['Evaluations'];
const base = '/manage/tenants/{tenantId}/projects/{projectId}/evals/evaluators';
/** The problems an operation on one evaluator answers. */
const evaluatorErrors = [400, 401, 403, 404, 500];

export const listEvaluators = listOperation({
  operationId: 'listEvaluators',
  summary: 'List evaluators (addition)',
  tags,
  path: base,
  service: 'evals',
  subject: 'svc.evals.evaluators.list',
  auth: 'manage',
  permission: 'view',
  params: ProjectPath,
  item: Evaluator,
  errors: [400, 401, 403, 500],
  addition: true,
});

export const createEvaluator = createOperation({
  operationId: 'createEvaluator',
  summary: 'Create an evaluator (addition)',
  description:
    'The `config` shape depends on `kind` (see the README). 409 when the id is taken; 422 when a regex or JSON Schema does not compile.',
  tags,
  path: base,
  service: 'evals',
  subject: 'svc.evals.evaluators.create',
  auth: 'manage',
  permission: 'edit',
  params: ProjectPath,
  body: EvaluatorCreate,
  item: Evaluator,
  errors: [400, 401, 403, 409, 422, 500],
  addition: true,
});

export const getEvaluator = getOperation({
  operationId: 'getEvaluator',
  summary: 'Get an evaluator (addition)',
  tags,
  path: `${base}/{id}`,
  service: 'evals',
  subject: 'svc.evals.evaluators.get',
  auth: 'manage',
  permission: 'view',
  params: IdPath,
  item: Evaluator,
  errors: evaluatorErrors,
  addition: true,
});

export const updateEvaluator = updateOperation({
  operationId: 'updateEvaluator',
  summary: 'Change an evaluator (addition)',
  tags,
  path: `${base}/{id}`,
  service: 'evals',
  subject: 'svc.evals.evaluators.update',
  auth: 'manage',
  permission: 'edit',
  params: IdPath,
  body: EvaluatorUpdate,
  item: Evaluator,
  errors: [400, 401, 403, 404, 422, 500],
  addition: true,
});

export const deleteEvaluator = deleteOperation({
  operationId: 'deleteEvaluator',
  summary: 'Delete an evaluator (addition)',
  description: 'Items of runs still queued for it finish with an `error` result.',
  tags,
  path: `${base}/{id}`,
  service: 'evals',
  subject: 'svc.evals.evaluators.delete',
  auth: 'manage',
  permission: 'edit',
  params: IdPath,
  reply: { status: 204, description: 'Deleted' },
  errors: evaluatorErrors,
  addition: true,
});
