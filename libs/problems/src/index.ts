import type { ZodError } from 'zod';

/** The one error-code table (see STYLE.md §4). */
export const problemCodes = {
  bad_request: { status: 400, title: 'Bad Request' },
  unauthorized: { status: 401, title: 'Unauthorized' },
  forbidden: { status: 403, title: 'Forbidden' },
  not_found: { status: 404, title: 'Not Found' },
  conflict: { status: 409, title: 'Conflict' },
  gone: { status: 410, title: 'Gone' },
  precondition_failed: { status: 412, title: 'Precondition Failed' },
  payload_too_large: { status: 413, title: 'Payload Too Large' },
  unsupported_media_type: { status: 415, title: 'Unsupported Media Type' },
  unprocessable_entity: { status: 422, title: 'Unprocessable Entity' },
  too_many_requests: { status: 429, title: 'Too Many Requests' },
  internal_server_error: { status: 500, title: 'Internal Server Error' },
  bad_gateway: { status: 502, title: 'Bad Gateway' },
  service_unavailable: { status: 503, title: 'Service Unavailable' },
  gateway_timeout: { status: 504, title: 'Gateway Timeout' },
} as const;

export type ProblemCode = keyof typeof problemCodes;

export interface FieldError {
  pointer: string;
  detail: string;
}

/** The RFC 9457 body we send (fields from SPEC "Errors"). */
export interface Problem {
  type?: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  instance?: string;
  requestId?: string;
  error: { code: string; message: string };
  errors?: FieldError[];
  /** Extra members some operations add (for example `retryAfter`). */
  [extra: string]: unknown;
}

/** Legacy `{details, error, message}` body, used where the spec names it. */
export interface LegacyErrorBody {
  details: unknown;
  error: string;
  message: string;
}

export interface AppErrorOptions {
  errors?: FieldError[];
  /** Headers the HTTP answer must carry (for example Retry-After). */
  headers?: Record<string, string>;
  /** Extra problem members. */
  extra?: Record<string, unknown>;
  /** Override for the error code string (for OAuth-style `error` fields). */
  oauthError?: string;
  cause?: unknown;
}

export class AppError extends Error {
  readonly code: ProblemCode;
  readonly status: number;
  readonly errors?: FieldError[];
  readonly headers?: Record<string, string>;
  readonly extra?: Record<string, unknown>;
  readonly oauthError?: string;

  constructor(code: ProblemCode, detail?: string, options: AppErrorOptions = {}) {
    super(detail ?? problemCodes[code].title, options.cause ? { cause: options.cause } : undefined);
    this.name = 'AppError';
    this.code = code;
    this.status = problemCodes[code].status;
    this.errors = options.errors;
    this.headers = options.headers;
    this.extra = options.extra;
    this.oauthError = options.oauthError;
  }

  toProblem(ctx: { instance?: string; requestId?: string } = {}): Problem {
    return buildProblem(this.code, this.message, {
      ...ctx,
      errors: this.errors,
      extra: this.extra,
      oauthError: this.oauthError,
    });
  }

  /** Rebuilds an AppError from a problem that crossed the bus. */
  static fromProblem(problem: Problem, headers?: Record<string, string>): AppError {
    const code = (problem.code in problemCodes ? problem.code : statusToCode(problem.status)) as ProblemCode;
    const {
      title: _t,
      status: _s,
      detail,
      code: _c,
      instance: _i,
      requestId: _r,
      error: _e,
      errors,
      oauthError,
      ...extra
    } = problem;
    return new AppError(code, detail, {
      errors,
      headers,
      extra: Object.keys(extra).length ? extra : undefined,
      oauthError: typeof oauthError === 'string' ? oauthError : undefined,
    });
  }
}

export function statusToCode(status: number): ProblemCode {
  const hit = (Object.keys(problemCodes) as ProblemCode[]).find((c) => problemCodes[c].status === status);
  return hit ?? (status >= 500 ? 'internal_server_error' : 'bad_request');
}

export function buildProblem(
  code: ProblemCode,
  detail: string,
  opts: {
    instance?: string;
    requestId?: string;
    errors?: FieldError[];
    extra?: Record<string, unknown>;
    oauthError?: string;
  } = {},
): Problem {
  const { status, title } = problemCodes[code];
  const problem: Problem = {
    title,
    status,
    detail,
    code,
    ...(opts.instance !== undefined ? { instance: opts.instance } : {}),
    ...(opts.requestId !== undefined ? { requestId: opts.requestId } : {}),
    error: { code, message: detail },
    ...(opts.errors?.length ? { errors: opts.errors } : {}),
    ...(opts.extra ?? {}),
  };
  if (opts.oauthError) problem.oauthError = opts.oauthError;
  return problem;
}

/** 5xx bodies carry a fixed, generic detail; the cause is logged, never sent. */
export const GENERIC_5XX_DETAIL = 'An internal error occurred; the request id identifies it in our logs';

/** JSON pointer from a zod issue path. */
export function toPointer(path: ReadonlyArray<PropertyKey>): string {
  return '/' + path.map((p) => String(p).replace(/~/g, '~0').replace(/\//g, '~1')).join('/');
}

export function zodFieldErrors(error: ZodError, prefix = ''): FieldError[] {
  return error.issues.map((issue) => ({
    pointer: prefix + (issue.path.length ? toPointer(issue.path) : ''),
    detail: issue.message,
  }));
}

/** A validation failure, one `errors` entry per zod issue. */
export function validationError(
  error: ZodError,
  where: 'body' | 'query' | 'params' | 'headers',
  code: ProblemCode = 'bad_request',
): AppError {
  const errors = zodFieldErrors(error, where === 'body' ? '' : `#${where}`);
  const first = errors[0];
  const summary = first ? `${first.pointer || where}: ${first.detail}` : 'invalid input';
  return new AppError(code, `Request ${where} is invalid (${summary})`, { errors });
}

/** 503 with `Retry-After: 1`: a part this request needs is busy or out of reach for now, and the same request sent again
 * shortly may succeed (a shed request, a store or bus that cannot be reached). `detail` says which part. */
export function tryAgainShortly(detail: string, cause?: unknown): AppError {
  return new AppError('service_unavailable', detail, { headers: { 'retry-after': '1' }, cause });
}

export function isAppError(e: unknown): e is AppError {
  return e instanceof AppError;
}
