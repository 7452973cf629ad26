import Ajv, { type ValidateFunction } from 'ajv';
import Ajv2019 from 'ajv/dist/2019';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

type AnyAjv = Ajv | Ajv2019 | Ajv2020;
const options = { allErrors: true, strict: false, logger: false as const };

/** Compiled validators kept, at most (the oldest goes first). */
const MAX_COMPILED = 500;

/**
 * Compiled validators by the schema's JSON text. A validator depends on that text alone (references are never
 * fetched and each schema is compiled in an Ajv instance of its own), so two evaluators with the same schema, of any
 * tenants, may share one; what one tenant's schema declares (`$id`s, also nested ones) is never seen by another's.
 */
const compiled = new Map<string, ValidateFunction>();

/** A fresh Ajv instance for the schema's dialect: its registry of `$id`s holds this one schema only. */
function ajvFor(schema: Record<string, unknown>): AnyAjv {
  const dialect = String(schema.$schema ?? '');
  const ajv = /draft-07/.test(dialect)
    ? new Ajv(options)
    : /2019-09/.test(dialect)
      ? new Ajv2019(options)
      : new Ajv2020(options);
  addFormats(ajv as Ajv);
  return ajv;
}

/** Compiles a JSON Schema (references are never fetched); throws with a readable message when it is not one. */
export function compileSchema(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  const hit = compiled.get(key);
  if (hit) return hit;
  const validate = ajvFor(schema).compile(schema);
  compiled.set(key, validate);
  if (compiled.size > MAX_COMPILED) compiled.delete(compiled.keys().next().value!);
  return validate;
}

export function schemaError(schema: Record<string, unknown>): string | null {
  try {
    compileSchema(schema);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}
