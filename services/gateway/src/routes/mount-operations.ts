import express, { type Request, type Response, type Router } from 'express';
import getRawBody from 'raw-body';
import { type AnyOperation, expressPath, type RequestMeta } from '@platform/contracts';
import { parseOperationInput, type ServiceBus, type WireReply } from '@platform/bus';
import { AppError } from '@platform/problems';
import type { Authenticator } from '../middleware/authenticate';
import type { RateLimiter } from '../middleware/rate-limit';
import { sendError } from '../middleware/errors';

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

function isJson(req: Request): boolean {
  return Boolean(req.is('application/json') || req.is('application/*+json'));
}

/** 413; the connection is closed afterwards, so the rest of an oversized body is never read. */
function tooLarge(limit: number): AppError {
  return new AppError('payload_too_large', `The request body is larger than this operation accepts (at most ${limit} bytes)`, {
    headers: { connection: 'close' },
  });
}

/**
 * Reads a JSON body of at most `limit` bytes. raw-body checks Content-Length before reading and stops reading a
 * chunked body the moment it passes the limit (express.json would read off the rest before answering).
 */
async function readJson(req: Request, limit: number): Promise<unknown> {
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  if (encoding !== 'identity') throw new AppError('unsupported_media_type', 'Send the body uncompressed (no Content-Encoding)');
  const charset = /;\s*charset=("?)([^";]+)\1/i.exec(req.headers['content-type'] ?? '')?.[2]?.toLowerCase();
  if (charset && charset !== 'utf-8' && charset !== 'utf8') throw new AppError('unsupported_media_type', 'Send the body as UTF-8');
  let text: string;
  try {
    text = await getRawBody(req, { length: req.headers['content-length'], limit, encoding: 'utf8' });
  } catch (err) {
    const type = (err as { type?: string }).type;
    if (type === 'entity.too.large') throw tooLarge(limit);
    // The client went away or sent fewer bytes than it announced: its fault, not ours (and nobody may be listening).
    if (type === 'request.aborted' || type === 'stream.not.readable' || type === 'request.size.invalid') {
      throw new AppError('bad_request', 'The request body was not received completely');
    }
    throw err;
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new AppError('bad_request', 'The request body is not valid JSON');
  }
}

function formParser(limit: number) {
  return express.urlencoded({ extended: false, limit, type: () => true });
}

export interface MountOptions {
  bus: ServiceBus;
  auth: Authenticator;
  limits: RateLimiter;
  bodyLimit: number;
  baseUrl?: string;
  timeoutMs: number;
}

/** One loop mounts every operation: authenticate, validate, forward over NATS, send the reply. */
export function mountOperations(router: Router, operations: AnyOperation[], opts: MountOptions): void {
  for (const op of [...operations].sort(routeOrder)) {
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
        const principal = await opts.auth.authenticate(op, req, requestId);
        if (takesBody) {
          const hasBody = req.headers['content-length'] !== '0' && (req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined);
          if (hasBody) {
            const wantsForm = op.bodyType === 'form';
            if (wantsForm ? !req.is('application/x-www-form-urlencoded') : !isJson(req)) {
              throw new AppError('unsupported_media_type', `Send the body as ${wantsForm ? 'application/x-www-form-urlencoded' : 'application/json'}`);
            }
            if (parseForm) {
              await new Promise<void>((resolve, reject) =>
                parseForm(req, res, (err?: unknown) => (err ? reject((err as { type?: string }).type === 'entity.too.large' ? tooLarge(limit) : err) : resolve())),
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
        const meta: RequestMeta = {
          ip: req.ip,
          origin: typeof req.headers.origin === 'string' ? req.headers.origin : undefined,
          userAgent: typeof req.headers['user-agent'] === 'string' ? req.headers['user-agent'] : undefined,
          baseUrl: opts.baseUrl ?? `${req.protocol}://${req.get('host')}`,
          headers: forwardedHeaders(op, req),
        };
        const reply: WireReply = await opts.bus.requestRaw(op.subject, { ...raw, principal, meta }, { requestId, timeoutMs: opts.timeoutMs }, req.path);
        sendReply(res, req, op, reply);
      } catch (err) {
        sendError(res, req, err, op);
      }
    });
  }
}

function forwardedHeaders(op: AnyOperation, req: Request): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const name of op.forwardHeaders ?? []) {
    const v = req.headers[name];
    if (typeof v === 'string') out[name] = v;
  }
  return Object.keys(out).length ? out : undefined;
}

function sendReply(res: Response, req: Request, op: AnyOperation, reply: WireReply): void {
  if (!reply.ok) {
    sendError(res, req, AppError.fromProblem(reply.problem, reply.headers), op);
    return;
  }
  for (const [k, v] of Object.entries(reply.headers ?? {})) res.setHeader(k, v);
  res.status(reply.status);
  if (reply.status === 204 || reply.body === undefined || reply.status === 302 || reply.status === 303) {
    res.end();
    return;
  }
  if (typeof reply.body === 'string' && reply.headers?.['content-type']) {
    res.send(reply.body);
    return;
  }
  res.json(reply.body);
}
