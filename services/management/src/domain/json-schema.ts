import Ajv, { type ErrorObject } from 'ajv';
import Ajv2019 from 'ajv/dist/2019';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { FieldError } from '@platform/problems';

type AnyAjv = Ajv | Ajv2019 | Ajv2020;

/** Largest JSON Schema we accept, as JSON text. */
export const MAX_SCHEMA_BYTES = 100_000;

const DIALECTS: Array<{ match: RegExp; name: string; make: () => AnyAjv }> = [
  { match: /^https?:\/\/json-schema\.org\/draft-07\/schema#?$/, name: 'draft-07', make: () => new Ajv(options) },
  { match: /^https:\/\/json-schema\.org\/draft\/2019-09\/schema#?$/, name: '2019-09', make: () => new Ajv2019(options) },
  { match: /^https:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/, name: '2020-12', make: () => new Ajv2020(options) },
];

/**
 * Strict about the schema itself (unknown keywords and unknown formats are errors, so typos show), lenient about
 * type combinations. References are never fetched: only `$ref`s inside the schema resolve.
 */
const options = { allErrors: true, strict: true, strictTypes: false, strictTuples: false, strictRequired: false, logger: false as const };

const instances = new Map<string, AnyAjv>();
function ajvFor(dialect: (typeof DIALECTS)[number]): AnyAjv {
  let ajv = instances.get(dialect.name);
  if (!ajv) {
    ajv = dialect.make();
    addFormats(ajv as Ajv);
    instances.set(dialect.name, ajv);
  }
  return ajv;
}

function dedupe(errors: FieldError[]): FieldError[] {
  const seen = new Set<string>();
  return errors.filter((e) => (seen.has(e.pointer + e.detail) ? false : (seen.add(e.pointer + e.detail), true))).slice(0, 20);
}

function metaSchemaErrors(errors: ErrorObject[] | null | undefined, pointer: string): FieldError[] {
  return dedupe((errors ?? []).map((e) => ({ pointer: pointer + e.instancePath, detail: e.message ?? 'is not valid JSON Schema' })));
}

/**
 * Checks that `schema` is a JSON Schema we can validate input with (draft-07 unless `$schema` names 2019-09 or
 * 2020-12). Returns the problems, each with a JSON pointer under `pointer`; empty when it compiles.
 */
export function jsonSchemaProblems(schema: Record<string, unknown>, pointer: string): FieldError[] {
  if (JSON.stringify(schema).length > MAX_SCHEMA_BYTES) return [{ pointer, detail: `must be at most ${MAX_SCHEMA_BYTES} bytes of JSON` }];
  const declared = schema.$schema;
  const dialect = declared === undefined ? DIALECTS[0]! : DIALECTS.find((d) => typeof declared === 'string' && d.match.test(declared));
  if (!dialect) {
    return [{ pointer: `${pointer}/$schema`, detail: 'must be draft-07, 2019-09 or 2020-12 (http://json-schema.org/draft-07/schema#, https://json-schema.org/draft/2019-09/schema, https://json-schema.org/draft/2020-12/schema)' }];
  }
  const ajv = ajvFor(dialect);
  if (!ajv.validateSchema(schema)) return metaSchemaErrors(ajv.errors, pointer);
  try {
    ajv.compile(schema);
    return [];
  } catch (err) {
    return [{ pointer, detail: `does not compile: ${(err as Error).message}` }];
  } finally {
    // Compiled schemas are cached by the instance; this one was only a check.
    ajv.removeSchema(schema);
  }
}

const PLACEHOLDER = /\{\{\s*([^{}\s]+)\s*\}\}/g;

/** `{{name}}` placeholders of a template, in order of first use. */
export function placeholders(template: string): string[] {
  return [...new Set([...template.matchAll(PLACEHOLDER)].map((m) => m[1]!))];
}

/**
 * Placeholders whose path is not declared by the schema's `properties` (a dotted path is followed while the
 * sub-schema declares `properties`; below a schema without them anything is allowed).
 */
export function undeclaredPlaceholders(template: string, schema: Record<string, unknown>): string[] {
  return placeholders(template).filter((name) => {
    let node: unknown = schema;
    for (const [i, segment] of name.split('.').entries()) {
      const props = (node as { properties?: unknown } | null)?.properties;
      if (props === undefined || props === null || typeof props !== 'object') return i === 0;
      if (!Object.hasOwn(props, segment)) return true;
      node = (props as Record<string, unknown>)[segment];
    }
    return false;
  });
}
