import { z } from 'zod';
import type { AnyOperation } from './operation';
import { allOperations } from './operations';
import { acceptsIdempotencyKey, IDEMPOTENCY_KEY_PATTERN, IDEMPOTENCY_KEY_TTL_SECONDS, repeatOf } from './repeat';

const ProblemSchema = {
  type: 'object',
  required: ['title', 'status', 'detail', 'code', 'error'],
  properties: {
    type: { type: 'string' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    code: { type: 'string' },
    instance: { type: 'string' },
    requestId: { type: 'string' },
    error: {
      type: 'object',
      required: ['code', 'message'],
      properties: { code: { type: 'string' }, message: { type: 'string' } },
    },
    errors: {
      type: 'array',
      items: {
        type: 'object',
        required: ['pointer', 'detail'],
        properties: { pointer: { type: 'string' }, detail: { type: 'string' } },
      },
    },
  },
};
const LegacyErrorSchema = {
  type: 'object',
  required: ['error', 'message'],
  properties: { details: {}, error: { type: 'string' }, message: { type: 'string' } },
};
const OAuthErrorSchema = {
  type: 'object',
  required: ['error'],
  properties: { error: { type: 'string' }, error_description: { type: 'string' } },
};

const idempotencyKeyParameter = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    `Makes a create safe to retry (IETF httpapi draft "The Idempotency-Key HTTP Header Field"). The first answer to a key is kept for ${IDEMPOTENCY_KEY_TTL_SECONDS / 3600} hours per tenant: ` +
    'the same key with the same request (same caller, path, query and body) answers it again, with `Idempotent-Replayed: true`, without doing the work twice; ' +
    'the same key with a different request answers 422; while the first request with the key is still being served, 409 (retry after it). ' +
    'An answer of 5xx is not kept (retry with the same key). Use a new random value (a UUID) per intended create; the typed client sends one on every create.',
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: IDEMPOTENCY_KEY_PATTERN.source },
};

const ifMatchParameter = {
  name: 'If-Match',
  in: 'header',
  required: false,
  description:
    'Optimistic concurrency (RFC 9110 §13.1.1): the `ETag` of the version the change is based on (or `*`: any current version). ' +
    'When the record has changed since (another writer came first), the answer is 412 and nothing is written. Without it the write applies to whatever is current.',
  schema: { type: 'string', minLength: 1, maxLength: 1024 },
};

const etagHeader = {
  description:
    'The version of the record in this answer (a strong entity tag); send it as `If-Match` to change or delete exactly this version',
  schema: { type: 'string' },
};

const statusText: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  410: 'Gone',
  412: 'Precondition Failed',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Entity',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const out = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' }) as Record<
    string,
    unknown
  >;
  delete out.$schema;
  return out;
}

function parameters(op: AnyOperation) {
  const params: unknown[] = [];
  const add = (schema: z.ZodType | undefined, where: 'path' | 'query') => {
    if (!schema) return;
    const js = jsonSchema(schema, 'input') as { properties?: Record<string, unknown>; required?: string[] };
    for (const [name, s] of Object.entries(js.properties ?? {})) {
      params.push({ name, in: where, required: where === 'path' || (js.required ?? []).includes(name), schema: s });
    }
  };
  add(op.params, 'path');
  add(op.query, 'query');
  if (acceptsIdempotencyKey(op)) params.push({ $ref: '#/components/parameters/IdempotencyKey' });
  if (op.etag === 'write') params.push({ $ref: '#/components/parameters/IfMatch' });
  return params;
}

/** Error statuses every operation may answer besides its declared ones (gateway-level). */
function gatewayStatuses(op: AnyOperation): number[] {
  // 431: the request line and headers together are over the server's limit (a long query string counts).
  const s = [429, 431, 500, 503, 504];
  if (op.auth !== 'none') s.push(401);
  if (op.body) s.push(400, 413, 415);
  if (op.params || op.query) s.push(400);
  if (op.auth === 'manage' || op.auth === 'cookie' || op.auth === 'bearer' || op.auth === 'admin') s.push(403);
  // Idempotency-Key: malformed (400), still in flight (409), reused for another request (422).
  if (acceptsIdempotencyKey(op)) s.push(400, 409, 422);
  // If-Match named another version than the current one.
  if (op.etag === 'write') s.push(412);
  return s;
}

const RedirectAsJson = {
  description:
    'Where the browser would be redirected: the answer to a request with `Accept: application/json` (browsers get the redirect)',
  content: {
    'application/json': {
      schema: {
        type: 'object',
        required: ['location'],
        additionalProperties: false,
        properties: {
          location: { type: 'string', description: 'The redirect target (the Location header of the redirect)' },
        },
      },
    },
  },
};

/** Where the API is served when no public base URL is configured: relative to the document, i.e. the gateway serving it. */
const DEFAULT_SERVERS = [
  { url: '/', description: 'The gateway that serves this document (set PUBLIC_BASE_URL to name it)' },
];

/** The license the API document states (the project has not published one yet: change it here when it does). */
export const API_LICENSE = { name: 'Proprietary: no license is granted yet', identifier: 'LicenseRef-Proprietary' };

export function buildOpenApi(
  ops: AnyOperation[] = allOperations,
  servers: Array<{ url: string; description?: string }> = DEFAULT_SERVERS,
) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of ops) {
    const responses: Record<string, unknown> = {};
    const success = (
      status: number,
      body: z.ZodType | undefined,
      description: string,
      contentType = 'application/json',
    ) => {
      responses[String(status)] = body
        ? { description, content: { [contentType]: { schema: jsonSchema(body, 'output') } } }
        : { description };
    };
    success(op.reply.status, op.reply.body, op.reply.description ?? 'Success', op.reply.contentType);
    // A versioned record's answer names its version (a 204 of a delete has none left to name).
    if (op.etag && op.reply.status !== 204)
      (responses[String(op.reply.status)] as Record<string, unknown>).headers = { ETag: etagHeader };
    for (const extra of op.extraReplies ?? []) success(extra.status, extra.body, extra.description, extra.contentType);
    // A redirect answers 200 with its target instead when the request asks for JSON (the gateway's sendReply).
    if (op.reply.status === 302 || op.reply.status === 303) responses['200'] = RedirectAsJson;
    const errorStatuses = [...new Set([...op.errors, ...gatewayStatuses(op)])].sort();
    for (const status of errorStatuses) {
      if (responses[String(status)]) continue;
      const shape =
        op.errorBody === 'oauth' && status < 500 && status !== 431
          ? { 'application/json': { schema: { $ref: '#/components/schemas/OAuthError' } } }
          : op.errorBody === 'legacy' &&
              status < 500 &&
              status !== 429 &&
              status !== 431 &&
              (!op.legacyErrorStatuses || op.legacyErrorStatuses.includes(status))
            ? {
                'application/json': { schema: { $ref: '#/components/schemas/LegacyError' } },
                'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } },
              }
            : { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } };
      responses[String(status)] = { description: statusText[status] ?? 'Error', content: shape };
    }
    const security =
      op.auth === 'none'
        ? []
        : op.auth === 'cookie'
          ? [{ cookieAuth: [] }]
          : op.auth === 'manage'
            ? [{ bearerAuth: [] }, { cookieAuth: [] }]
            : op.auth === 'run'
              ? [{ bearerAuth: [] }]
              : [{ bearerAuth: [] }];
    const entry: Record<string, unknown> = {
      operationId: op.operationId,
      summary: op.summary,
      ...(op.description ? { description: op.description } : {}),
      tags: op.tags,
      security,
      parameters: parameters(op),
      responses,
      ...(op.addition ? { 'x-addition': true } : {}),
      // Whether the gateway sends it again to another replica when none answered (see libs/contracts/src/repeat.ts).
      'x-safe-to-repeat': repeatOf(op),
    };
    if (op.body) {
      const schema = jsonSchema(op.body, 'input');
      // A raw body is taken as JSON or form-encoded (what webhook providers send).
      const types =
        op.bodyType === 'raw'
          ? ['application/json', 'application/x-www-form-urlencoded']
          : [op.bodyType === 'form' ? 'application/x-www-form-urlencoded' : 'application/json'];
      entry.requestBody = {
        required: !op.body.safeParse(undefined).success,
        content: Object.fromEntries(types.map((t) => [t, { schema }])),
      };
    }
    if (op.listener && op.listener !== 'main') entry['x-listener'] = op.listener;
    (paths[op.path] ??= {})[op.method] = entry;
    // Operations of another listener (analytics ingest) live on their own base URL.
    if (op.listener === 'analytics') {
      paths[op.path]!.servers = [
        {
          url: '{analytics_url}',
          description: 'The analytics ingest base URL (gateway ANALYTICS_PORT)',
          variables: { analytics_url: { default: 'http://127.0.0.1:3001' } },
        },
      ];
    }
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Agent Platform API',
      version: '0.1.0',
      description:
        'Management, run, evaluation, chat-app, credential-gateway and analytics operations. Generated from the operation declarations in libs/contracts.',
      license: API_LICENSE,
    },
    servers,
    paths,
    components: {
      schemas: { Problem: ProblemSchema, LegacyError: LegacyErrorSchema, OAuthError: OAuthErrorSchema },
      parameters: { IdempotencyKey: idempotencyKeyParameter, IfMatch: ifMatchParameter },
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer' },
        cookieAuth: { type: 'apiKey', in: 'cookie', name: 'platform.session_token' },
      },
    },
  };
}
