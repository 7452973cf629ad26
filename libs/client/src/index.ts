import type { z } from 'zod';
import * as contracts from '@platform/contracts';
import {
  acceptsIdempotencyKey,
  allOperations,
  type AnyOperation,
  IDEMPOTENCY_KEY_HEADER,
  type OperationDef,
  type Pagination,
  safeToRepeat,
} from '@platform/contracts';

/**
 * A typed client for the whole HTTP API, derived from the operation declarations in libs/contracts:
 * one method per operation (named by its operationId), with params, query, body and reply typed from the zod
 * schemas. Error answers are thrown as `ProblemError`.
 *
 * ```ts
 * const api = platformClient({ baseUrl: 'http://127.0.0.1:3000', token: process.env.ADMIN_TOKEN });
 * const { data } = await api.createApiKey({ params: { tenantId: 'acme', projectId: 'demo' }, body: { agentId: 'a1', name: 'ci' } });
 * for await (const key of api.paginate(api.ops.listApiKeys, { params: { tenantId: 'acme', projectId: 'demo' } })) console.log(key.id);
 * ```
 */

type Has<S> = z.ZodType extends S ? false : true;
type ParamsOf<O> = O extends OperationDef<infer P, any, any, any> ? P : never;
type QueryOf<O> = O extends OperationDef<any, infer Q, any, any> ? Q : never;
type BodyOf<O> = O extends OperationDef<any, any, infer B, any> ? B : never;
type ReplyOf<O> = O extends OperationDef<any, any, any, infer R> ? R : never;

/** What a call takes: `params` when the path has any, `query` (optional), `body` when the operation takes one. */
export type RequestOf<O extends AnyOperation> = (Has<ParamsOf<O>> extends true
  ? { params: z.input<ParamsOf<O>> }
  : { params?: undefined }) &
  (Has<QueryOf<O>> extends true ? { query?: z.input<QueryOf<O>> } : { query?: undefined }) &
  (Has<BodyOf<O>> extends true
    ? undefined extends z.input<BodyOf<O>>
      ? { body?: z.input<BodyOf<O>> }
      : { body: z.input<BodyOf<O>> }
    : { body?: undefined }) &
  CallOptions;

/** What a call answers: the declared reply body (`undefined` for operations without one, such as 204). */
export type ReplyBody<O extends AnyOperation> = Has<ReplyOf<O>> extends true ? z.output<ReplyOf<O>> : undefined;

export interface CallOptions {
  /** Extra request headers (for example `x-request-id`). */
  headers?: Record<string, string>;
  /** Another bearer credential for this call only. */
  token?: string;
  /** A Cookie header (session-cookie operations). */
  cookie?: string;
  signal?: AbortSignal;
  /**
   * Creates: the `Idempotency-Key` to send (default: a new random UUID per call, so the client's own retries of it
   * never create twice); `false` sends none.
   */
  idempotencyKey?: string | false;
}

export interface ClientOptions {
  /** The gateway base URL, e.g. http://127.0.0.1:3000 */
  baseUrl: string;
  /** Base URL of the analytics ingest listener (`{analytics_url}`), for operations served there. */
  analyticsUrl?: string;
  /** Bearer credential: admin token, tenant access token, API key, analytics key… */
  token?: string;
  headers?: Record<string, string>;
  fetch?: typeof fetch;
  /**
   * How many times a request that is safe to repeat (reads, PUTs, creates with their Idempotency-Key, events with an
   * id) is sent again after a 502, 503 or 504 answer or a failed connection; default 2.
   */
  retries?: number;
}

export interface ProblemFieldError {
  pointer: string;
  detail: string;
}

/**
 * An error answer (4xx/5xx). `code` and `message` are read from whichever shape the operation answers with:
 * RFC 9457 problem+json (`code`, `detail`, `errors`), the legacy `{error, message}` body or OAuth `{error, error_description}`.
 */
export class ProblemError extends Error {
  override readonly name = 'ProblemError';
  readonly status: number;
  readonly code: string;
  readonly title: string | undefined;
  readonly detail: string;
  /** One entry per invalid field (validation failures). */
  readonly errors: ProblemFieldError[];
  readonly requestId: string | undefined;
  readonly operationId: string;
  /** The body as received. */
  readonly body: unknown;
  readonly headers: Headers;

  constructor(operationId: string, status: number, body: unknown, headers: Headers) {
    const b = (typeof body === 'object' && body !== null ? body : {}) as Record<string, any>;
    const code =
      typeof b.code === 'string'
        ? b.code
        : typeof b.error === 'string'
          ? b.error
          : typeof b.error?.code === 'string'
            ? b.error.code
            : `http_${status}`;
    const detail =
      typeof b.detail === 'string'
        ? b.detail
        : typeof b.message === 'string'
          ? b.message
          : typeof b.error_description === 'string'
            ? b.error_description
            : typeof body === 'string' && body
              ? body
              : `HTTP ${status}`;
    super(`${operationId}: ${status} ${code}: ${detail}`);
    this.status = status;
    this.code = code;
    this.title = typeof b.title === 'string' ? b.title : undefined;
    this.detail = detail;
    this.errors = Array.isArray(b.errors) ? (b.errors as ProblemFieldError[]) : [];
    this.requestId = typeof b.requestId === 'string' ? b.requestId : (headers.get('x-request-id') ?? undefined);
    this.operationId = operationId;
    this.body = body;
    this.headers = headers;
  }
}

export function isProblem(err: unknown, status?: number): err is ProblemError {
  return err instanceof ProblemError && (status === undefined || err.status === status);
}

/** Every operation the gateway mounts, by operationId, with its declared types. */
type Exports = typeof contracts;
export type Operations = {
  [K in keyof Exports as Exports[K] extends AnyOperation ? K : never]: Exports[K] extends AnyOperation
    ? Exports[K]
    : never;
};

export type OperationMethods = {
  [K in keyof Operations]: (input: RequestOf<Operations[K]>) => Promise<ReplyBody<Operations[K]>>;
};

/** Operations whose reply is a page: `{ data: T[], pagination }`. */
export type ItemOf<O extends AnyOperation> =
  ReplyBody<O> extends { data: Array<infer T>; pagination: Pagination } ? T : never;

const mounted = new Set<unknown>(allOperations);
export const operations = Object.fromEntries(
  Object.entries(contracts).filter(([, v]) => mounted.has(v)),
) as unknown as Operations;

function encodePath(op: AnyOperation, params: Record<string, unknown> | undefined): string {
  return op.path.replace(/\{([^}]+)\}/g, (_m, name: string) => {
    const v = params?.[name];
    if (v === undefined || v === null) throw new TypeError(`${op.operationId}: missing path parameter ${name}`);
    return encodeURIComponent(String(v));
  });
}

function queryString(query: Record<string, unknown> | undefined): string {
  if (!query) return '';
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null) continue;
    if (Array.isArray(v)) for (const item of v) qs.append(k, String(item));
    else qs.append(k, typeof v === 'object' ? JSON.stringify(v) : String(v));
  }
  const s = qs.toString();
  return s ? `?${s}` : '';
}

export interface Reply<O extends AnyOperation> {
  status: number;
  headers: Headers;
  body: ReplyBody<O>;
}

export interface PlatformClient extends OperationMethods {
  /** The declarations, to pass to `call` and `paginate`. */
  ops: Operations;
  /** Calls one operation; answers the reply body. */
  call<O extends AnyOperation>(op: O, input: RequestOf<O>): Promise<ReplyBody<O>>;
  /** Calls one operation; answers status, headers and body (for operations with several success statuses, e.g. 201/200). */
  send<O extends AnyOperation>(op: O, input: RequestOf<O>): Promise<Reply<O>>;
  /** Walks every page of a list operation (`page` 1, 2, … until `pagination.pages`), yielding items. */
  paginate<O extends AnyOperation>(op: O, input: RequestOf<O>, opts?: { limit?: number }): AsyncGenerator<ItemOf<O>>;
  /** Every item of a list operation, all pages. */
  listAll<O extends AnyOperation>(op: O, input: RequestOf<O>, opts?: { limit?: number }): Promise<Array<ItemOf<O>>>;
  /** The same client with another bearer credential. */
  withToken(token: string | undefined): PlatformClient;
}

const RETRIED_STATUSES = new Set([502, 503, 504]);

/** Sends again (same request, same Idempotency-Key) after a 502/503/504 or a failed connection, `retries` times at most. */
async function fetchWithRetries(
  attempt: () => Promise<Response>,
  retries: number,
  signal: AbortSignal | undefined,
): Promise<Response> {
  for (let n = 0; ; n++) {
    let res: Response;
    try {
      res = await attempt();
    } catch (err) {
      if (n >= retries || signal?.aborted) throw err;
      await new Promise((r) => setTimeout(r, 100 * 2 ** n));
      continue;
    }
    if (n >= retries || !RETRIED_STATUSES.has(res.status) || signal?.aborted) return res;
    await res.arrayBuffer().catch(() => undefined);
    const after = Number(res.headers.get('retry-after'));
    await new Promise((r) =>
      setTimeout(r, Number.isFinite(after) && after > 0 ? Math.min(after * 1000, 2000) : 100 * 2 ** n),
    );
  }
}

export function platformClient(options: ClientOptions): PlatformClient {
  const doFetch = options.fetch ?? fetch;

  async function send<O extends AnyOperation>(op: O, input: RequestOf<O>): Promise<Reply<O>> {
    const i = (input ?? {}) as {
      params?: Record<string, unknown>;
      query?: Record<string, unknown>;
      body?: unknown;
    } & CallOptions;
    const base = op.listener === 'analytics' ? options.analyticsUrl : options.baseUrl;
    if (!base) throw new TypeError(`${op.operationId} is served on the analytics base URL: give analyticsUrl`);
    const url = base.replace(/\/$/, '') + encodePath(op, i.params) + queryString(i.query);
    const headers: Record<string, string> = {
      accept: 'application/json, application/problem+json',
      ...options.headers,
      ...i.headers,
    };
    const token = i.token ?? options.token;
    if (token) headers.authorization = `Bearer ${token}`;
    if (i.cookie) headers.cookie = i.cookie;
    let body: string | undefined;
    if (i.body !== undefined) {
      if (op.bodyType === 'form') {
        headers['content-type'] = 'application/x-www-form-urlencoded';
        body = new URLSearchParams(
          Object.entries(i.body as Record<string, unknown>)
            .filter(([, v]) => v !== undefined)
            .map(([k, v]): [string, string] => [k, String(v)]),
        ).toString();
      } else {
        headers['content-type'] = 'application/json';
        body = JSON.stringify(i.body);
      }
    }
    if (
      acceptsIdempotencyKey(op) &&
      i.idempotencyKey !== false &&
      !Object.keys(headers).some((h) => h.toLowerCase() === IDEMPOTENCY_KEY_HEADER)
    ) {
      headers[IDEMPOTENCY_KEY_HEADER] = i.idempotencyKey ?? crypto.randomUUID();
    }
    const repeatable = safeToRepeat(op, { body: i.body, idempotencyKey: headers[IDEMPOTENCY_KEY_HEADER] });
    const res = await fetchWithRetries(
      () => doFetch(url, { method: op.method.toUpperCase(), headers, body, redirect: 'manual', signal: i.signal }),
      repeatable ? (options.retries ?? 2) : 0,
      i.signal,
    );
    const text = await res.text();
    const type = res.headers.get('content-type') ?? '';
    let parsed: unknown = text || undefined;
    if (text && /json/.test(type)) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    if (res.status >= 400) throw new ProblemError(op.operationId, res.status, parsed, res.headers);
    return { status: res.status, headers: res.headers, body: parsed as ReplyBody<O> };
  }

  async function call<O extends AnyOperation>(op: O, input: RequestOf<O>): Promise<ReplyBody<O>> {
    return (await send(op, input)).body;
  }

  async function* paginate<O extends AnyOperation>(
    op: O,
    input: RequestOf<O>,
    opts: { limit?: number } = {},
  ): AsyncGenerator<ItemOf<O>> {
    const q = { ...((input as { query?: Record<string, unknown> }).query ?? {}) };
    const limit = opts.limit ?? (q.limit as number | undefined) ?? 100;
    for (let page = 1; ; page++) {
      const reply = (await call(op, { ...input, query: { ...q, page, limit } } as RequestOf<O>)) as unknown as {
        data?: unknown[];
        pagination?: Pagination;
      };
      if (!Array.isArray(reply?.data) || !reply.pagination)
        throw new TypeError(`${op.operationId} is not a list operation`);
      for (const item of reply.data) yield item as ItemOf<O>;
      if (page >= reply.pagination.pages || reply.data.length === 0) return;
    }
  }

  const client = {
    ops: operations,
    call,
    send,
    paginate,
    async listAll<O extends AnyOperation>(op: O, input: RequestOf<O>, opts?: { limit?: number }) {
      const out: Array<ItemOf<O>> = [];
      for await (const item of paginate(op, input, opts)) out.push(item);
      return out;
    },
    withToken: (token: string | undefined) => platformClient({ ...options, token }),
  } as Record<string, unknown>;
  for (const [name, op] of Object.entries(operations))
    client[name] = (input: RequestOf<AnyOperation>) => call(op as AnyOperation, input);
  return client as unknown as PlatformClient;
}
