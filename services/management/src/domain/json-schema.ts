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
  {
    match: /^https:\/\/json-schema\.org\/draft\/2019-09\/schema#?$/,
    name: '2019-09',
    make: () => new Ajv2019(options),
  },
  {
    match: /^https:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/,
    name: '2020-12',
    make: () => new Ajv2020(options),
  },
];

/**
 * Strict about the schema itself (unknown keywords and unknown formats are errors, so typos show), lenient about
 * type combinations. References are never fetched: only `$ref`s inside the schema resolve.
 */
const options = {
  allErrors: true,
  strict: true,
  strictTypes: false,
  strictTuples: false,
  strictRequired: false,
  logger: false as const,
};

const instances = new Map<string, AnyAjv>();
/** One instance per dialect and use: schema checks add and remove schemas, input validation keeps them compiled. */
function ajvFor(dialect: (typeof DIALECTS)[number], use: 'check' | 'validate' = 'check'): AnyAjv {
  let ajv = instances.get(`${use}:${dialect.name}`);
  if (!ajv) {
    ajv = dialect.make();
    addFormats(ajv as Ajv);
    instances.set(`${use}:${dialect.name}`, ajv);
  }
  return ajv;
}

function dedupe(errors: FieldError[]): FieldError[] {
  const seen = new Set<string>();
  return errors
    .filter((e) => (seen.has(e.pointer + e.detail) ? false : (seen.add(e.pointer + e.detail), true)))
    .slice(0, 20);
}

function metaSchemaErrors(errors: ErrorObject[] | null | undefined, pointer: string): FieldError[] {
  return dedupe(
    (errors ?? []).map((e) => ({ pointer: pointer + e.instancePath, detail: e.message ?? 'is not valid JSON Schema' })),
  );
}

/**
 * Checks that `schema` is a JSON Schema we can validate input with (draft-07 unless `$schema` names 2019-09 or
 * 2020-12). Returns the problems, each with a JSON pointer under `pointer`; empty when it compiles.
 */
export function jsonSchemaProblems(schema: Record<string, unknown>, pointer: string): FieldError[] {
  if (JSON.stringify(schema).length > MAX_SCHEMA_BYTES)
    return [{ pointer, detail: `must be at most ${MAX_SCHEMA_BYTES} bytes of JSON` }];
  const declared = schema.$schema;
  const dialect =
    declared === undefined
      ? DIALECTS[0]!
      : DIALECTS.find((d) => typeof declared === 'string' && d.match.test(declared));
  if (!dialect) {
    return [
      {
        pointer: `${pointer}/$schema`,
        detail:
          'must be draft-07, 2019-09 or 2020-12 (http://json-schema.org/draft-07/schema#, https://json-schema.org/draft/2019-09/schema, https://json-schema.org/draft/2020-12/schema)',
      },
    ];
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

/**
 * Renders `{{path}}` placeholders with values from `input` (a dotted path walks into objects and arrays): a string as
 * is, a missing value as the empty string, anything else as JSON.
 */
export function renderTemplate(template: string, input: unknown): string {
  return template.replace(PLACEHOLDER, (_m, path: string) => {
    let node: unknown = input;
    for (const segment of path.split('.')) {
      node =
        node !== null && typeof node === 'object' && Object.hasOwn(node, segment)
          ? (node as Record<string, unknown>)[segment]
          : undefined;
    }
    if (node === undefined || node === null) return '';
    return typeof node === 'string' ? node : JSON.stringify(node);
  });
}

/** Compiled input schemas by their JSON text (triggers are invoked many times with the same schema). */
const compiled = new Map<string, ReturnType<AnyAjv['compile']>>();
const MAX_COMPILED = 500;

/**
 * Validates `value` against a schema that passed `jsonSchemaProblems`; the problems carry JSON pointers into the
 * value (a missing property points at where it belongs).
 */
export function valueProblems(schema: Record<string, unknown>, value: unknown): FieldError[] {
  const text = JSON.stringify(schema);
  let validate = compiled.get(text);
  if (!validate) {
    const declared = schema.$schema;
    const dialect =
      declared === undefined
        ? DIALECTS[0]!
        : (DIALECTS.find((d) => typeof declared === 'string' && d.match.test(declared)) ?? DIALECTS[0]!);
    const ajv = ajvFor(dialect, 'validate');
    validate = ajv.compile(schema);
    if (compiled.size >= MAX_COMPILED) {
      const [oldest, old] = compiled.entries().next().value!;
      compiled.delete(oldest);
      ajv.removeSchema(old.schema as object);
    }
    compiled.set(text, validate);
  }
  if (validate(value)) return [];
  return dedupe(
    (validate.errors ?? []).map((e) => {
      const missing = e.keyword === 'required' ? (e.params as { missingProperty?: string }).missingProperty : undefined;
      const pointer =
        missing === undefined
          ? e.instancePath
          : `${e.instancePath}/${missing.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      return { pointer: pointer || '/', detail: e.message ?? 'is not valid' };
    }),
  );
}
