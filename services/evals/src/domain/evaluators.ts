import {
  evaluatorConfigSchema,
  type Evaluator,
  type EvaluatorCreate,
  type EvaluatorKind,
  type EvaluatorUpdate,
  type ProjectScope,
} from '@platform/contracts';
import { AppError, validationError } from '@platform/problems';
import { randomId } from '@platform/secrets';
import type { EvaluatorRepo } from '../data/evaluator.repo';
import { schemaError } from './json-schema';
import { compilePattern } from './pattern';

export interface EvaluatorDeps {
  evaluators: EvaluatorRepo;
}

const notFound = (id: string) => new AppError('not_found', `Evaluator "${id}" not found`);

/** What zod cannot check: the regex compiles (for RE2, the linear-time engine it runs on), the JSON Schema is one. */
function assertConfigUsable(kind: EvaluatorKind, config: Record<string, unknown>): void {
  if (kind === 'regex') {
    try {
      compilePattern(String(config.pattern), String(config.flags ?? ''));
    } catch (err) {
      throw new AppError(
        'unprocessable_entity',
        `config.pattern is not a regular expression the evaluator can run (${(err as Error).message}); RE2 syntax, without lookaround or backreferences`,
        {
          errors: [
            {
              pointer: '/config/pattern',
              detail: 'is not a valid RE2 regular expression (no lookaround, no backreferences)',
            },
          ],
        },
      );
    }
  }
  if (kind === 'json_schema') {
    const problem = schemaError(config.schema as Record<string, unknown>);
    if (problem)
      throw new AppError('unprocessable_entity', `config.schema is not a usable JSON Schema (${problem})`, {
        errors: [{ pointer: '/config/schema', detail: problem }],
      });
  }
}

export async function addEvaluator(
  deps: EvaluatorDeps,
  scope: ProjectScope,
  input: EvaluatorCreate,
): Promise<Evaluator> {
  const config = (input.config ?? {}) as Record<string, unknown>;
  assertConfigUsable(input.kind, config);
  const now = new Date();
  const id = input.id ?? randomId(20);
  const created = await deps.evaluators.insert({
    id,
    ...scope,
    name: input.name,
    description: input.description ?? null,
    kind: input.kind,
    config: JSON.stringify(config),
    agentIds: [...new Set(input.agentIds ?? [])],
    createdAt: now,
    updatedAt: now,
  });
  if (!created) throw new AppError('conflict', `An evaluator with id "${id}" already exists in this project`);
  return created;
}

export async function findEvaluator(deps: EvaluatorDeps, scope: ProjectScope, id: string): Promise<Evaluator> {
  const e = await deps.evaluators.findById(scope, id);
  if (!e) throw notFound(id);
  return e;
}

export async function changeEvaluator(
  deps: EvaluatorDeps,
  scope: ProjectScope,
  id: string,
  change: EvaluatorUpdate,
): Promise<Evaluator> {
  const current = await findEvaluator(deps, scope, id);
  const set: Record<string, unknown> = { updatedAt: new Date() };
  if (change.config !== undefined) {
    const r = evaluatorConfigSchema(current.kind).safeParse(change.config);
    if (!r.success) {
      const err = validationError(r.error, 'body');
      throw new AppError('bad_request', err.message.replace('Request body', 'config'), {
        errors: (err.errors ?? []).map((e) => ({ ...e, pointer: `/config${e.pointer}` })),
      });
    }
    assertConfigUsable(current.kind, r.data as Record<string, unknown>);
    set.config = JSON.stringify(r.data);
  }
  if (change.name !== undefined) set.name = change.name;
  if (change.description !== undefined) set.description = change.description;
  if (change.agentIds !== undefined) set.agentIds = [...new Set(change.agentIds)];
  const updated = await deps.evaluators.update(scope, id, set);
  if (!updated) throw notFound(id);
  return updated;
}

export async function removeEvaluator(deps: EvaluatorDeps, scope: ProjectScope, id: string): Promise<void> {
  if (!(await deps.evaluators.remove(scope, id))) throw notFound(id);
}
