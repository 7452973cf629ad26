import Ajv, { type ValidateFunction } from 'ajv';
import Ajv2019 from 'ajv/dist/2019';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

type AnyAjv = Ajv | Ajv2019 | Ajv2020;
const options = { allErrors: true, strict: false, logger: false as const };
const instances = new Map<string, AnyAjv>();

function ajvFor(schema: Record<string, unknown>): AnyAjv {
  const dialect = String(schema.$schema ?? '');
  const name = /draft-07/.test(dialect) ? 'draft-07' : /2019-09/.test(dialect) ? '2019-09' : '2020-12';
  let ajv = instances.get(name);
  if (!ajv) {
    ajv = name === 'draft-07' ? new Ajv(options) : name === '2019-09' ? new Ajv2019(options) : new Ajv2020(options);
    addFormats(ajv as Ajv);
    instances.set(name, ajv);
  }
  return ajv;
}

/** Compiles a JSON Schema (references are never fetched); throws with a readable message when it is not one. */
export function compileSchema(schema: Record<string, unknown>): ValidateFunction {
  return ajvFor(schema).compile(schema);
}

export function schemaError(schema: Record<string, unknown>): string | null {
  try {
    compileSchema(schema);
    return null;
  } catch (err) {
    return (err as Error).message;
  }
}
