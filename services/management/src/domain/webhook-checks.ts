import { createHmac } from 'node:crypto';
import jmespath from 'jmespath';
import { DEFAULT_TIMESTAMP_TOLERANCE_SECONDS, type SignatureVerification } from '@platform/contracts';
import { AppError, type FieldError } from '@platform/problems';
import { keyedHash, safeEqual } from '@platform/secrets';
import { unprocessable } from './unprocessable';
import type { StoredAuthHeader } from '../data/trigger.repo';

/** A webhook call as the service receives it: headers as sent, the query, the parsed body and its exact bytes. */
export interface WebhookCall {
  headers: Record<string, string>;
  query: Record<string, string | string[]>;
  body: unknown;
  rawBody: Buffer;
}

/** A header by name: exactly as written when `caseSensitive`, else in any case (HTTP's own rule). */
export function headerOf(call: WebhookCall, name: string, caseSensitive = false): string | undefined {
  if (caseSensitive) return call.headers[name];
  const lower = name.toLowerCase();
  for (const [k, v] of Object.entries(call.headers)) if (k.toLowerCase() === lower) return v;
  return undefined;
}

/**
 * Every configured header must be sent (401 otherwise) with its value (403 otherwise). Each sent value is hashed
 * with the same key as the stored one and the hashes compared in constant time; every header is checked, so the
 * time does not tell which one was wrong.
 */
export function checkAuthentication(call: WebhookCall, headers: StoredAuthHeader[], pepper: string): void {
  let missing: string | undefined;
  let wrong = false;
  for (const h of headers) {
    const sent = headerOf(call, h.name);
    if (sent === undefined) {
      missing ??= h.name;
      continue;
    }
    if (!safeEqual(keyedHash(pepper, sent), h.valueHash)) wrong = true;
  }
  if (missing !== undefined) throw new AppError('unauthorized', `Missing authentication header ${missing}`);
  if (wrong) throw new AppError('forbidden', 'An authentication header has the wrong value');
}

/** The first capture group of `regex` in `value` (the whole match when it has none); undefined when it does not match. */
function extract(value: string, regex: string | undefined): string | undefined {
  if (regex === undefined) return value;
  const m = new RegExp(regex).exec(value);
  return m ? (m[1] ?? m[0]) : undefined;
}

/** A JMESPath result as text: a string as is, anything else as JSON; undefined when there is nothing there. */
function searchText(body: unknown, expression: string): string | undefined {
  let found: unknown;
  try {
    found = jmespath.search(body, expression);
  } catch {
    return undefined;
  }
  if (found === null || found === undefined) return undefined;
  return typeof found === 'string' ? found : JSON.stringify(found);
}

const signatureMissing = (detail: string) => new AppError('unauthorized', `Signature verification failed: ${detail}`);

/** The signature the caller sent, with the prefix stripped and the regex applied. */
function sentSignature(call: WebhookCall, spec: SignatureVerification): string {
  const { source, key, prefix, regex } = spec.signature;
  let value: string | undefined;
  if (source === 'header') value = headerOf(call, key, spec.validation.headerCaseSensitive);
  else if (source === 'query') {
    const q = call.query[key];
    value = Array.isArray(q) ? q[0] : q;
  } else value = searchText(call.body, key);
  if (value === undefined || value === '') throw signatureMissing(`no signature in ${source} ${key}`);
  if (prefix) {
    if (!value.startsWith(prefix)) throw signatureMissing(`the signature does not start with ${prefix}`);
    value = value.slice(prefix.length);
  }
  const extracted = extract(value, regex);
  if (!extracted) throw signatureMissing(`the signature regex does not match ${source} ${key}`);
  return extracted;
}

/**
 * The bytes that were signed: each component in order (a missing optional one is left out), joined by the separator;
 * and the text of the component marked `timestamp` (undefined when it is missing).
 */
function signedBytes(call: WebhookCall, spec: SignatureVerification): { bytes: Buffer; timestamp: string | undefined } {
  let timestamp: string | undefined;
  const text = (s: string) => Buffer.from(spec.validation.normalizeUnicode ? s.normalize('NFC') : s, 'utf8');
  const parts: Buffer[] = [];
  spec.signedComponents.forEach((c, i) => {
    let part: Buffer | undefined;
    if (c.source === 'literal') part = text(c.value ?? '');
    else if (c.source === 'header') {
      const v = headerOf(call, c.key!, spec.validation.headerCaseSensitive);
      const extracted = v === undefined ? undefined : extract(v, c.regex);
      part = extracted === undefined ? undefined : text(extracted);
    } else if (c.key === undefined && c.regex === undefined) {
      // The raw body: its exact bytes (normalised only when asked to).
      part = spec.validation.normalizeUnicode ? text(call.rawBody.toString('utf8')) : call.rawBody;
    } else {
      const v = c.key === undefined ? call.rawBody.toString('utf8') : searchText(call.body, c.key);
      const extracted = v === undefined ? undefined : extract(v, c.regex);
      part = extracted === undefined ? undefined : text(extracted);
    }
    if (part === undefined) {
      if (c.required)
        throw signatureMissing(`signed component ${i} (${c.source}${c.key ? ` ${c.key}` : ''}) is missing`);
      return;
    }
    if (c.timestamp) timestamp = part.toString('utf8');
    parts.push(part);
  });
  const separator = Buffer.from(spec.componentJoin.separator, 'utf8');
  return { bytes: Buffer.concat(parts.flatMap((p, i) => (i ? [separator, p] : [p]))), timestamp };
}

/**
 * The replay guard of timestamped signatures (Stripe, Slack): the signed time, in Unix seconds, must be within the
 * tolerance of now, either way (a clock a little ahead is fine). 401 otherwise, like a missing signature: the
 * request may have been signed by the provider, but not for now.
 */
function checkTimestamp(spec: SignatureVerification, timestamp: string | undefined, now: number): void {
  if (!spec.signedComponents.some((c) => c.timestamp)) return;
  if (timestamp === undefined) throw signatureMissing('the signed timestamp is missing');
  if (!/^\d{1,12}$/.test(timestamp.trim()))
    throw signatureMissing('the signed timestamp is not a Unix time in seconds');
  const tolerance = spec.validation.timestampToleranceSeconds ?? DEFAULT_TIMESTAMP_TOLERANCE_SECONDS;
  const age = Math.round(now / 1000) - Number(timestamp.trim());
  if (Math.abs(age) > tolerance) {
    throw signatureMissing(
      `the signed timestamp is ${Math.abs(age)} s ${age >= 0 ? 'old' : 'in the future'}; at most ${tolerance} s are accepted`,
    );
  }
}

/**
 * Applies `signatureVerification` exactly as configured: HMAC-`algorithm` with the signing secret over the signed
 * components, encoded as `encoding`, compared in constant time with the signature sent. No signature (or a missing
 * required component, or a signed timestamp outside the tolerance) is 401; a signature that does not match is 403.
 */
export function checkSignature(call: WebhookCall, spec: SignatureVerification, secret: string, now = Date.now()): void {
  if (!spec.validation.allowEmptyBody && call.rawBody.length === 0) throw signatureMissing('the body is empty');
  const sent = sentSignature(call, spec);
  const signed = signedBytes(call, spec);
  checkTimestamp(spec, signed.timestamp, now);
  const expected = createHmac(spec.algorithm, secret).update(signed.bytes).digest(spec.encoding);
  const matches = spec.encoding === 'hex' ? safeEqual(expected, sent.toLowerCase()) : safeEqual(expected, sent);
  if (!matches) throw new AppError('forbidden', 'Signature verification failed: the signature does not match');
}

/** The body against the trigger's inputSchema: 422 with a pointer into the body per problem. */
export function checkInput(problems: FieldError[]): void {
  if (problems.length) throw unprocessable(problems);
}

/**
 * `outputTransform`: `jmespath` (if any) picks from the input, then `objectTransformation` (if any) builds an object
 * whose every key is a JMESPath into that result (null where nothing is found). A failing expression is 422.
 */
export function transformInput(
  input: unknown,
  transform: { jmespath?: string; objectTransformation?: Record<string, string> } | null,
): unknown {
  if (!transform) return input;
  const search = (value: unknown, expression: string, pointer: string): unknown => {
    try {
      return jmespath.search(value, expression) ?? null;
    } catch (err) {
      throw unprocessable([{ pointer, detail: `outputTransform failed: ${(err as Error).message}` }]);
    }
  };
  let out = transform.jmespath ? search(input, transform.jmespath, '/outputTransform/jmespath') : input;
  if (transform.objectTransformation) {
    const from = out;
    out = Object.fromEntries(
      Object.entries(transform.objectTransformation).map(([k, expr]) => [
        k,
        search(from, expr, `/outputTransform/objectTransformation/${k}`),
      ]),
    );
  }
  return out;
}

/** JMESPath expressions that do not compile, as problems of the trigger definition. */
export function transformProblems(
  transform: { jmespath?: string; objectTransformation?: Record<string, string> } | null | undefined,
): FieldError[] {
  if (!transform) return [];
  const errors: FieldError[] = [];
  const check = (expression: string, pointer: string) => {
    try {
      jmespath.compile(expression);
    } catch (err) {
      errors.push({ pointer, detail: `is not a valid JMESPath expression: ${(err as Error).message}` });
    }
  };
  if (transform.jmespath) check(transform.jmespath, '/outputTransform/jmespath');
  for (const [k, expr] of Object.entries(transform.objectTransformation ?? {}))
    check(expr, `/outputTransform/objectTransformation/${k}`);
  return errors;
}
