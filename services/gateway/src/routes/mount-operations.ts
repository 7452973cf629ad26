import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import getRawBody from 'raw-body';
import secureJson from 'secure-json-parse';
import { type AnyOperation, AUTH_METHODS, expressPath, type Principal, type RequestMeta } from '@platform/contracts';
import { bodyOf, parseOperationInput, type ServiceBus, type WireReply } from '@platform/bus';
import { AppError } from '@platform/problems';
import type { Authenticator } from '../middleware/authenticate';
import type { RateLimiter } from '../middleware/rate-limit';
import type { Idempotency } from '../middleware/idempotency';
import type { ErasingProjects } from '../middleware/erasing-projects';
import { sendError } from '../middleware/errors';
import { assertSameOriginCookieWrite } from '../middleware/same-origin';

const METHODS_WITH_BODY = new Set(['post', 'put', 'patch', 'delete']);

/** Static segments before parameters, so `/x/bulk` is tried before `/x/{id}`. */
export function routeOrder(a: AnyOperation, b: AnyOperation): number {
  const sa = a.path.split('/');
  const sb = b.path.split('/');
  for (let i = 0; i < Math.min(sa.length, sb.length); i++) {
    const pa = sa[i]!.startsWith('{');
    const pb = sb[i]!.startsWith('{');
    if (pa !== pb) return pa ? 1 : -1;
  }
  return sb.length - sa.length;
}

/**
 * The two forms clients send (`application/json`, with or without `charset=utf-8`) are recognised without type-is
 * parsing the header on every request; anything else (other parameters, `+json` types, malformed ones) goes to type-is.
 */
const PLAIN_JSON = /^application\/json(?:;\s*charset="?utf-8"?)?$/i;

function isJson(req: Request): boolean {
  const type = req.headers['content-type'];
  if (type !== undefined && PLAIN_JSON.test(type)) return true;
  return Boolean(req.is('application/json') || req.is('application/*+json'));
}

/** Whether each connection's peer is a trusted proxy: express's `trust proxy` asked once per connection. */
const trustedPeers = new WeakMap<object, boolean>();

/**
 * The request's scheme as express's `req.protocol` gives it (X-Forwarded-Proto from a trusted proxy, else the socket's),
 * except that the peer's address is checked against `trust proxy` once per connection instead of on every request
 * (parsing it was about 2 % of the gateway's time under load).
 */
function protocolOf(req: Request): string {
  const socket = req.socket as Request['socket'] & { encrypted?: boolean };
  const own = socket.encrypted ? 'https' : 'http';
  let trusted = trustedPeers.get(socket);
  if (trusted === undefined) {
    const trust = req.app.get('trust proxy fn') as (address: string | undefined, hop: number) => boolean;
    trusted = trust(socket.remoteAddress, 0);
    trustedPeers.set(socket, trusted);
  }
  if (!trusted) return own;
  const header = req.get('x-forwarded-proto') || own;
  return header.split(',', 1)[0]!.trim();
}

/** 413; the connection is closed afterwards, so the rest of an oversized body is never read. */
function tooLarge(limit: number): AppError {
  return new AppError(
    'payload_too_large',
    `The request body is larger than this operation accepts (at most ${limit} bytes)`,
    {
      headers: { connection: 'close' },
    },
  );
}

/**
 * Reads a JSON body of at most `limit` bytes. raw-body checks Content-Length before reading and stops reading a
 * chunked body the moment it passes the limit (express.json would read off the rest before answering).
 */
async function readJson(req: Request, limit: number): Promise<unknown> {
  return parseJsonBytes(await readBytes(req, limit));
}

/** Reads the body's bytes (at most `limit`), uncompressed and UTF-8. */
async function readBytes(req: Request, limit: number): Promise<Buffer> {
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (encoding !== 'identity')
    throw new AppError('unsupported_media_type', 'Send the body uncompressed (no Content-Encoding)');
  const charset = /;\s*charset=("?)([^";]+)\1/i.exec(req.headers['content-type'] ?? '')?.[2]?.toLowerCase();
  if (charset && charset !== 'utf-8' && charset !== 'utf8')
    throw new AppError('unsupported_media_type', 'Send the body as UTF-8');
  let raw: Buffer;
  try {
    raw = await getRawBody(req, { length: req.headers['content-length'], limit });
  } catch (err) {
    const type = (err as { type?: string }).type;
    if (type === 'entity.too.large') throw tooLarge(limit);
    // The client went away or sent fewer bytes than it announced: its fault, not ours (and nobody may be listening).
    if (type === 'request.aborted' || type === 'stream.not.readable' || type === 'request.size.invalid') {
      throw new AppError('bad_request', 'The request body was not received completely');
    }
    throw err;
  }
  return raw;
}

/** Parses JSON bytes with the gateway's rules (UTF-8, no prototype keys, depth, no NUL). */
function parseJsonBytes(raw: Buffer): unknown {
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw new AppError('bad_request', 'The request body is not valid UTF-8');
  }
  let body: unknown;
  try {
    // Prototype poisoning (`__proto__`, `constructor.prototype`) is refused, not silently dropped.
    body = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (err) {
    if (/prototype/i.test((err as Error).message))
      throw new AppError('bad_request', 'The request body must not contain __proto__ or constructor.prototype keys');
    throw new AppError('bad_request', 'The request body is not valid JSON');
  }
  const shape = inspectJson(body, MAX_JSON_DEPTH);
  if (shape.kind === 'too_deep')
    throw new AppError('bad_request', `The request body is nested deeper than ${MAX_JSON_DEPTH} levels`);
  // NUL cannot be stored (PostgreSQL text refuses it) and has no use in any field: refused here, not a 500 later.
  if (shape.kind === 'nul') {
    const detail = 'must not contain NUL (\\u0000) characters';
    throw new AppError('bad_request', `The request body ${detail}`, {
      errors: [{ pointer: shape.pointer, detail: `The value ${detail}` }],
    });
  }
  return body;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
/** Deepest JSON nesting accepted (documents are stored as BSON, whose servers refuse about 100 levels). */
export const MAX_JSON_DEPTH = 32;

/** Where a value sits in the body: its parent's place and its key or index (the JSON pointer is built only for an error). */
interface Place {
  parent: Place | undefined;
  key: string;
}

/** The JSON pointer (RFC 6901) of a place (`/` for the body itself), with one more key or index when given. */
function pointerOf(place: Place | undefined, last?: string): string {
  const keys = last === undefined ? [] : [last];
  for (let p = place; p; p = p.parent) keys.push(p.key);
  return keys.length
    ? `/${keys
        .reverse()
        .map((k) => k.replace(/~/g, '~0').replace(/\//g, '~1'))
        .join('/')}`
    : '/';
}

type Shape = { kind: 'ok' } | { kind: 'too_deep' } | { kind: 'nul'; pointer: string };

/**
 * Walks a parsed body iteratively (hostile input cannot overflow the stack): `too_deep` when arrays/objects nest
 * deeper than `max`, `nul` (with the JSON pointer of the value or key) when a key or string holds U+0000. Only arrays
 * and objects are kept to visit, each with a link to its parent's place: the pointer is built only for the error.
 */
function inspectJson(value: unknown, max: number): Shape {
  if (typeof value === 'string') return value.includes('\u0000') ? { kind: 'nul', pointer: '/' } : { kind: 'ok' };
  if (value === null || typeof value !== 'object') return { kind: 'ok' };
  const stack: Array<[object, number, Place | undefined]> = [[value, 1, undefined]];
  while (stack.length) {
    const [container, depth, at] = stack.pop()!;
    if (depth > max) return { kind: 'too_deep' };
    const keys = Array.isArray(container) ? undefined : Object.keys(container);
    const count = keys ? keys.length : (container as unknown[]).length;
    for (let i = 0; i < count; i++) {
      const key = keys ? keys[i]! : undefined;
      if (key !== undefined && key.includes('\u0000')) return { kind: 'nul', pointer: pointerOf(at) };
      const child = key !== undefined ? (container as Record<string, unknown>)[key] : (container as unknown[])[i];
      if (typeof child === 'string') {
        if (child.includes('\u0000')) return { kind: 'nul', pointer: pointerOf(at, key ?? String(i)) };
      } else if (child !== null && typeof child === 'object') {
        stack.push([child, depth + 1, { parent: at, key: key ?? String(i) }]);
      }
    }
  }
  return { kind: 'ok' };
}

const CONTROL_CHARS = /[\u0000-\u001f\u007f]/;

/** Path parameters and query values never carry control characters (ids, names, cursors). */
function assertNoControlChars(req: Request): void {
  for (const [name, value] of Object.entries(req.params)) {
    if (typeof value === 'string' && CONTROL_CHARS.test(value)) {
      throw new AppError('bad_request', `The path parameter ${name} must not contain control characters`, {
        errors: [{ pointer: `/params/${name}`, detail: 'must not contain control characters' }],
      });
    }
  }
  for (const [name, value] of Object.entries(req.query)) {
    const values = Array.isArray(value) ? value : [value];
    if (values.some((v) => typeof v === 'string' && CONTROL_CHARS.test(v))) {
      throw new AppError('bad_request', `The query parameter ${name} must not contain control characters`, {
        errors: [{ pointer: `/query/${name}`, detail: 'must not contain control characters' }],
      });
    }
  }
}

function formParser(limit: number) {
  return express.urlencoded({ extended: false, limit, type: () => true });
}

/**
 * Authenticates under the failed-authentication lockout (middleware/auth-lockout.ts): a credential over its failure
 * limit, or one not recently verified from an address over its limit, gets 429 without being checked; each 401 counts.
 */
async function authenticateLimited(op: AnyOperation, req: Request, requestId: string, opts: MountOptions) {
  if (op.auth === 'none') return opts.auth.authenticate(op, req, requestId);
  const credential = opts.auth.credentialOf(op, req);
  await opts.limits.lockout.admit(req, credential, () => opts.auth.knows(op, req));
  try {
    return await opts.auth.authenticate(op, req, requestId);
  } catch (err) {
    if (err instanceof AppError && err.status === 401) await opts.limits.lockout.failed(req, credential);
    throw err;
  }
}

export interface MountOptions {
  bus: ServiceBus;
  auth: Authenticator;
  limits: RateLimiter;
  idempotency: Idempotency;
  erasing: ErasingProjects;
  bodyLimit: number;
  baseUrl?: string;
  timeoutMs: number;
}

const BROWSER_AUTH_METHODS = new Set<string>([AUTH_METHODS.appJwt, AUTH_METHODS.anonymous]);
const ANONYMOUS_SESSION_OP = 'createAnonymousSession';

/**
 * CORS for the browser-facing run endpoints. A successful answer names the caller's Origin in
 * Access-Control-Allow-Origin only when run-auth has checked that Origin against the app's allowedDomains (web-client
 * JWTs, anonymous session tokens, and the anonymous-session issue itself); every other answer carries no CORS grant,
 * so a page on another origin cannot read it.
 */
function allowVerifiedOrigin(op: AnyOperation, principal: Principal, req: Request, res: Response): void {
  const origin = req.headers.origin;
  if (typeof origin !== 'string' || !op.path.startsWith('/run/')) return;
  const verified =
    (principal.kind === 'run' && BROWSER_AUTH_METHODS.has(principal.authMethod)) ||
    op.operationId === ANONYMOUS_SESSION_OP;
  if (!verified) return;
  res.setHeader('access-control-allow-origin', origin);
  res.setHeader('access-control-expose-headers', 'x-request-id');
  res.append('vary', 'Origin');
}

/** Preflights of the browser-facing run endpoints: they grant nothing by themselves (see allowVerifiedOrigin). */
function mountRunPreflights(router: Router, operations: AnyOperation[]): void {
  const byPath = new Map<string, Set<string>>();
  for (const op of operations) {
    if (!op.path.startsWith('/run/')) continue;
    (byPath.get(op.path) ?? byPath.set(op.path, new Set()).get(op.path)!).add(op.method.toUpperCase());
  }
  for (const [path, methods] of byPath) {
    router.options(expressPath(path), (req: Request, res: Response) => {
      const origin = req.headers.origin;
      if (typeof origin === 'string') {
        res.setHeader('access-control-allow-origin', origin);
        res.setHeader('access-control-allow-methods', [...methods].join(', '));
        res.setHeader(
          'access-control-allow-headers',
          'authorization, content-type, x-app-id, x-challenge-solution, x-request-id',
        );
        res.setHeader('access-control-max-age', '600');
        res.append('vary', 'Origin');
      }
      res.status(204).end();
    });
  }
}

// lower-cased: express matches paths case-insensitively, and so do the groups
const firstSegment = (path: string) => (path.split('/', 2)[1] ?? '').toLowerCase();

/**
 * One loop mounts every operation: authenticate, validate, forward over NATS, send the reply. Operations are grouped
 * by their first path segment (`manage`, `run`, …), each group in its own router, so a request is matched only
 * against its group's routes (express tries routes one by one: a `/run` call no longer walks past 100 `/manage` ones).
 */
export function mountOperations(app: Pick<Router, 'use'>, operations: AnyOperation[], opts: MountOptions): void {
  const groups = new Map<string, Router>();
  for (const op of operations) {
    const segment = firstSegment(op.path);
    if (!groups.has(segment)) groups.set(segment, express.Router({ strict: false }));
  }
  const groupOf = (path: string) => groups.get(firstSegment(path))!;
  app.use((req: Request, res: Response, next: NextFunction) => {
    const group = groups.get(firstSegment(req.path));
    if (group) group(req, res, next);
    else next();
  });
  if (groups.has('run')) mountRunPreflights(groupOf('/run'), operations);
  for (const op of [...operations].sort(routeOrder)) {
    const router = groupOf(op.path);
    const takesBody = Boolean(op.body) && METHODS_WITH_BODY.has(op.method);
    const limit = op.bodyLimit ?? opts.bodyLimit;
    const parseForm = takesBody && op.bodyType === 'form' ? formParser(limit) : undefined;
    router[op.method](expressPath(op.path), async (req: Request, res: Response) => {
      res.locals.operation = op;
      const requestId = res.locals.requestId as string;
      try {
        // Counted before anything else, so floods of bad credentials or bodies are limited too.
        await opts.limits.check(req);
        // A declared length over the limit is refused before anything is read or verified.
        if (takesBody && Number(req.headers['content-length'] ?? 0) > limit) throw tooLarge(limit);
        const principal = await authenticateLimited(op, req, requestId, opts);
        assertNoControlChars(req);
        // Tenant isolation before the body is even read: another tenant's caller learns nothing about the input rules.
        opts.auth.authorizeTenant(op, principal, req.params);
        let rawBody: Buffer | undefined;
        const baseUrl = opts.baseUrl ?? `${protocolOf(req)}://${req.get('host')}`;
        assertSameOriginCookieWrite(op, principal, req, baseUrl);
        if (takesBody) {
          const hasBody =
            req.headers['content-length'] !== '0' &&
            (req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined);
          if (hasBody) {
            const wantsForm = op.bodyType === 'form';
            if (
              op.bodyType === 'raw'
                ? !isJson(req) && !req.is('application/x-www-form-urlencoded')
                : wantsForm
                  ? !req.is('application/x-www-form-urlencoded')
                  : !isJson(req)
            ) {
              throw new AppError(
                'unsupported_media_type',
                `Send the body as ${wantsForm ? 'application/x-www-form-urlencoded' : 'application/json'}`,
              );
            }
            if (op.bodyType === 'raw') {
              rawBody = await readRaw(req, limit);
            } else if (parseForm) {
              await new Promise<void>((resolve, reject) =>
                parseForm(req, res, (err?: unknown) =>
                  err
                    ? reject((err as { type?: string }).type === 'entity.too.large' ? tooLarge(limit) : err)
                    : resolve(),
                ),
              );
            } else {
              req.body = await readJson(req, limit);
            }
          }
        }
        const raw = { params: req.params, query: req.query, body: takesBody ? req.body : undefined };
        // Validate before forwarding: bad input never reaches a service.
        const parsed = parseOperationInput(op, raw);
        opts.auth.authorize(op, principal, parsed.params as Record<string, unknown>);
        opts.erasing.assertWritable(op, principal, parsed.params as Record<string, unknown>);
        const meta: RequestMeta = {
          ip: req.ip,
          origin: typeof req.headers.origin === 'string' ? req.headers.origin : undefined,
          userAgent: typeof req.headers['user-agent'] === 'string' ? req.headers['user-agent'] : undefined,
          baseUrl,
          headers: forwardedHeaders(op, req),
          credentialId: opts.auth.credentialIdOf(op, req, principal),
          ...(op.bodyType === 'raw' ? { rawBody: (rawBody ?? Buffer.alloc(0)).toString('base64') } : {}),
        };
        // Sent again to another replica when none answered in time, if the operation is safe to repeat (its declaration).
        const idempotencyKey = opts.idempotency.keyOf(op, req);
        const reply: WireReply = await opts.idempotency.run(op, req, principal, idempotencyKey, () =>
          opts.bus.send(op, { ...raw, principal, meta }, { requestId, timeoutMs: opts.timeoutMs, instance: req.path }),
        );
        if (reply.ok) allowVerifiedOrigin(op, principal, req, res);
        sendReply(res, req, op, reply);
      } catch (err) {
        sendError(res, req, err, op);
      }
    });
  }
}

/**
 * A raw body: its exact bytes, parsed into `req.body` as JSON or as a form (a repeated form field keeps its last value).
 * The bytes go to the service as well (signatures are computed over them).
 */
async function readRaw(req: Request, limit: number): Promise<Buffer> {
  const raw = await readBytes(req, limit);
  if (isJson(req)) req.body = raw.length ? parseJsonBytes(raw) : undefined;
  else req.body = Object.fromEntries(new URLSearchParams(raw.toString('utf8')));
  return raw;
}

function forwardedHeaders(op: AnyOperation, req: Request): Record<string, string> | undefined {
  if (op.forwardHeaders?.[0] === '*') return headersAsSent(req);
  const out: Record<string, string> = {};
  // A conditional write's If-Match goes to the service that owns the record's version.
  for (const name of op.etag === 'write' ? [...(op.forwardHeaders ?? []), 'if-match'] : (op.forwardHeaders ?? [])) {
    const v = req.headers[name];
    if (typeof v === 'string') out[name] = v;
  }
  return Object.keys(out).length ? out : undefined;
}

/** Every request header with its name as the client wrote it (repeats joined with `, `). */
function headersAsSent(req: Request): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!;
    const value = req.rawHeaders[i + 1]!;
    out[name] = out[name] === undefined ? value : `${out[name]}, ${value}`;
  }
  return out;
}

const isRedirect = (status: number) => status === 302 || status === 303;

function sendReply(res: Response, req: Request, op: AnyOperation, reply: WireReply): void {
  if (!reply.ok) {
    sendError(res, req, AppError.fromProblem(reply.problem, reply.headers), op);
    return;
  }
  if (isRedirect(reply.status) && reply.headers?.location) {
    // Browsers follow the redirect; a script that asks for JSON gets where it would be sent (see buildOpenApi).
    res.append('vary', 'Accept');
    if (req.accepts(['text/html', 'application/json']) === 'application/json') {
      const { location, ...rest } = reply.headers;
      for (const [k, v] of Object.entries(rest)) res.setHeader(k, v);
      res.status(200).json({ location });
      return;
    }
  }
  for (const [k, v] of Object.entries(reply.headers ?? {})) res.setHeader(k, v);
  res.status(reply.status);
  if (
    reply.status === 204 ||
    (reply.body === undefined && reply.json === undefined) ||
    reply.status === 302 ||
    reply.status === 303
  ) {
    res.end();
    return;
  }
  // A body the service already encoded as JSON goes out as it came (what res.json would send, without a parse and a
  // stringify here); a text body with its own content type is sent as text.
  if (reply.headers?.['content-type']) {
    const body = bodyOf(reply);
    if (typeof body === 'string') {
      res.send(body);
      return;
    }
  }
  if (reply.json !== undefined) {
    if (!res.get('content-type')) res.setHeader('content-type', 'application/json; charset=utf-8');
    res.send(reply.json);
    return;
  }
  res.json(reply.body);
}
