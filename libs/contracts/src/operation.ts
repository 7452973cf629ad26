import type { z } from 'zod';
import type { ServiceName } from './services';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/**
 * Auth schemes:
 * - `manage`: bearer token (admin or tenant access token) or session cookie; tenant-scoped by `{tenantId}`.
 * - `bearer`: bearer token only.  `cookie`: session cookie only.
 * - `admin`: the platform admin token only.
 * - `run`: run-API credentials (API key, app JWT, anonymous session, OAuth bearer).
 * - `analytics`: a web-integration analytics key.  `none`: public.
 */
export type AuthScheme = 'manage' | 'bearer' | 'cookie' | 'admin' | 'run' | 'analytics' | 'none';

/** Minimum role a `manage` operation needs (view < use < edit < admin). */
export type Permission = 'view' | 'use' | 'edit' | 'admin';

export interface ExtraReply {
  status: number;
  description: string;
  body?: z.ZodType;
  contentType?: string;
}

export interface OperationDef<
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
  R extends z.ZodType = z.ZodType,
> {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  method: HttpMethod;
  path: string;
  service: ServiceName;
  subject: string;
  auth: AuthScheme;
  permission?: Permission;
  params?: P;
  query?: Q;
  body?: B;
  /**
   * `json` (default), `form` (application/x-www-form-urlencoded), or `raw`: JSON or form, parsed into `body`, with the
   * exact bytes also passed to the service as `meta.rawBody` (base64), for signatures over the body.
   */
  bodyType?: 'json' | 'form' | 'raw';
  /** Largest accepted body, bytes (gateway default 1 MB). */
  bodyLimit?: number;
  reply: { status: number; body?: R; contentType?: string; description?: string };
  extraReplies?: ExtraReply[];
  errors: number[];
  /** Error body shape: problem+json (default), legacy `{details,error,message}`, or OAuth `{error,error_description}`. */
  errorBody?: 'problem' | 'legacy' | 'oauth';
  /** With `errorBody: 'legacy'`: only these error statuses use the legacy body; the others stay problem+json. */
  legacyErrorStatuses?: number[];
  /** Request headers forwarded to the service (lowercase names); `['*']` forwards every header as sent (names in their case). */
  forwardHeaders?: string[];
  /**
   * Optimistic concurrency (RFC 9110 §8.8.3, §13.1.1): `read` answers carry the record's `ETag`; `write` also
   * takes `If-Match` (forwarded to the service) and answers 412 when it names another version.
   */
  etag?: 'read' | 'write';
  /** Marks operations we designed beyond the spec (documented in the README's API notes). */
  addition?: boolean;
  /** Rate-limit bucket; defaults to the auth scheme. */
  rateLimit?: string;
  /** Which listener serves it (analytics has its own base URL). */
  listener?: 'main' | 'analytics' | 'credential-gateway';
  /**
   * Whether the gateway may send the request to the service again when no replica answered (see `repeatOf` in
   * repeat.ts for the values and the default by method). Declare it only where the default is wrong.
   */
  repeat?: Repeat;
}

/**
 * Is the operation safe to repeat (the first attempt may or may not have been carried out)?
 * - `always`: doing it twice leaves the same state and answer as doing it once (reads, PUTs); the gateway sends it
 *   again to another replica when none answered in time;
 * - `with-id`: when the body carries its own `id` the service answers the stored row for a known id, so the gateway
 *   sends it again too; with only an `Idempotency-Key`, like `with-key`;
 * - `with-key`: a create; safe for the caller to repeat with the same `Idempotency-Key` (the gateway answers the first
 *   result). The gateway itself does not send it to a second replica after a timeout: the first may only be slow,
 *   and the services do not know the key;
 * - `never`.
 * Whatever the policy, a request that no replica received (NATS "no responders") is sent again within its deadline.
 */
export type Repeat = 'always' | 'with-id' | 'with-key' | 'never';

export type AnyOperation = OperationDef<z.ZodType, z.ZodType, z.ZodType, z.ZodType>;

/** Operations that stay open while their project is being erased: starting (again) an erasure. */
export const OPEN_DURING_ERASURE: ReadonlySet<string> = new Set(['deleteProject', 'deleteConversation']);

/**
 * Whether the gateway refuses the operation with 409 while its project is being erased (docs/operating.md,
 * "Erasure"): writes to a project named by the path or by a run or analytics credential.
 */
export function refusedDuringErasure(op: Pick<AnyOperation, 'method' | 'operationId' | 'path' | 'auth'>): boolean {
  if (op.method === 'get' || OPEN_DURING_ERASURE.has(op.operationId)) return false;
  return op.path.includes('{projectId}') || op.auth === 'run' || op.auth === 'analytics';
}

export function operation<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType, R extends z.ZodType>(
  def: OperationDef<P, Q, B, R>,
): OperationDef<P, Q, B, R> {
  // A write to a project answers 409 while the project is being erased: every such operation declares it.
  if (refusedDuringErasure(def) && !def.errors.includes(409))
    return { ...def, errors: [...def.errors, 409].sort((a, b) => a - b) };
  return def;
}

type ParamsOf<O> = O extends OperationDef<infer P, any, any, any> ? P : never;
type QueryOf<O> = O extends OperationDef<any, infer Q, any, any> ? Q : never;
type BodyOf<O> = O extends OperationDef<any, any, infer B, any> ? B : never;
type ReplyOf<O> = O extends OperationDef<any, any, any, infer R> ? R : never;

/** What a handler receives: validated input (operations without params, query or body get `unknown`). */
export interface OperationInput<O extends AnyOperation> {
  params: z.infer<ParamsOf<O>>;
  query: z.infer<QueryOf<O>>;
  body: z.infer<BodyOf<O>>;
}

/** What a caller sends (before defaults and coercion). */
export interface OperationRequest<O extends AnyOperation> {
  params?: z.input<ParamsOf<O>>;
  query?: z.input<QueryOf<O>>;
  body?: z.input<BodyOf<O>>;
}

export type OperationReplyBody<O extends AnyOperation> = z.infer<ReplyOf<O>>;

/** Express-style path from an OpenAPI one: `/a/{b}` → `/a/:b`. */
export function expressPath(path: string): string {
  return path.replace(/\{([^}]+)\}/g, ':$1');
}
