import type { z } from 'zod';

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

export type ServiceName =
  | 'gateway'
  | 'management'
  | 'run-auth'
  | 'events-ingest'
  | 'analytics'
  | 'evals'
  | 'chatapp'
  | 'credential-gateway'
  | 'webhook-dispatcher';

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
  /** `json` (default), `form` (application/x-www-form-urlencoded) or `array` (JSON array top level). */
  bodyType?: 'json' | 'form';
  /** Largest accepted body, bytes (gateway default 1 MB). */
  bodyLimit?: number;
  reply: { status: number; body?: R; contentType?: string; description?: string };
  extraReplies?: ExtraReply[];
  errors: number[];
  /** Error body shape: problem+json (default), legacy `{details,error,message}`, or OAuth `{error,error_description}`. */
  errorBody?: 'problem' | 'legacy' | 'oauth';
  /** With `errorBody: 'legacy'`: only these error statuses use the legacy body; the others stay problem+json. */
  legacyErrorStatuses?: number[];
  /** Request headers forwarded to the service (lowercase names). */
  forwardHeaders?: string[];
  /** Marks operations we designed beyond the spec (documented in the README's API notes). */
  addition?: boolean;
  /** Rate-limit bucket; defaults to the auth scheme. */
  rateLimit?: string;
  /** Which listener serves it (analytics has its own base URL). */
  listener?: 'main' | 'analytics' | 'credential-gateway';
}

export type AnyOperation = OperationDef<z.ZodType, z.ZodType, z.ZodType, z.ZodType>;

export function operation<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType, R extends z.ZodType>(
  def: OperationDef<P, Q, B, R>,
): OperationDef<P, Q, B, R> {
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
