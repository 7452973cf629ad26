import { type NatsConnection, type Msg, type Subscription, ErrorCode, type NatsError } from 'nats';
import type { z } from 'zod';
import {
  type AnyOperation,
  gatewayMayRepeat,
  type InternalCallDef,
  type OperationInput,
  type OperationReplyBody,
  type OperationRequest,
  Principal,
  type RequestMeta,
} from '@platform/contracts';
import {
  AppError,
  tryAgainShortly,
  type Problem,
  GENERIC_5XX_DETAIL,
  validationError,
  buildProblem,
} from '@platform/problems';
import { getLogger, runWithContext, currentContext, type RequestContext } from '@platform/logger';
import {
  SpanKind,
  SpanStatusCode,
  contextFromHeaders,
  currentTraceId,
  currentTraceparent,
  inSpan,
  natsBatchedRequests,
  natsRequestDuration,
  natsRequestsRefused,
  traceHeaders,
} from '@platform/telemetry';
import { decode, headerMap, headersOf } from './codec';
import { natsReachable } from './connection';
import { BATCH_HEADER, type FramePart, readFrame, writeFrame } from './frame';
import { type Answer, RequestMux } from './request-mux';
import { markUndelivered, undeliveredFromNats, withRetries, type RetryPolicy } from './retry';
import { type BusKey, SIGNATURE_HEADER, verifyRequest } from './signature';

const log = getLogger('bus.rpc');

/** What travels on the wire for one operation call. */
export interface WireRequest {
  params?: unknown;
  query?: unknown;
  body?: unknown;
  principal: Principal;
  meta?: RequestMeta;
}

/**
 * A reply. A success read off the bus carries its body still encoded (`json`, the body's JSON text) so that the
 * gateway can send it on without parsing and serialising it again; `bodyOf` gives the value.
 */
export type WireReply =
  | { ok: true; status: number; body?: unknown; json?: string; headers?: Record<string, string> }
  | { ok: false; problem: Problem; headers?: Record<string, string> };

/** The body of a success reply, parsed from its JSON text when it came off the bus that way. */
export function bodyOf(reply: Extract<WireReply, { ok: true }>): unknown {
  return reply.json !== undefined ? JSON.parse(reply.json) : reply.body;
}

/**
 * A reply: a success is its status in headers (`platform-status`, `platform-headers` as JSON when there are any) with
 * the body's JSON as the payload (empty for no body); a problem is one JSON `WireReply`.
 */
const STATUS_HEADER = 'platform-status';
const HEADERS_HEADER = 'platform-headers';
const utf8 = new TextDecoder();

/** A reply's payload (as text) and headers. */
function replyParts(out: WireReply): FramePart {
  if (!out.ok) return { text: JSON.stringify(out) };
  const headers: Record<string, string> = { [STATUS_HEADER]: String(out.status) };
  if (out.headers && Object.keys(out.headers).length > 0) headers[HEADERS_HEADER] = JSON.stringify(out.headers);
  const json = out.json ?? (out.body === undefined ? undefined : JSON.stringify(out.body));
  return { text: json ?? '', headers };
}

const textEncoder = new TextEncoder();
const encodeText = (s: string) => textEncoder.encode(s);

/** A reply as it came off the bus (a success with its body still JSON text, see `bodyOf`). */
export function readReply(msg: Answer): WireReply {
  const status = msg.headers?.get(STATUS_HEADER);
  if (!status) return decode<WireReply>(msg.data);
  const headers = msg.headers?.get(HEADERS_HEADER);
  return {
    ok: true,
    status: Number(status),
    ...(msg.data.length > 0 ? { json: utf8.decode(msg.data) } : {}),
    ...(headers ? { headers: JSON.parse(headers) as Record<string, string> } : {}),
  };
}

/** A handler may return a body (sent with the contract's status) or a `Reply` to pick status and headers. */
export class Reply<T = unknown> {
  constructor(
    readonly status: number,
    readonly body?: T,
    readonly headers?: Record<string, string>,
  ) {}
}

export function reply<T>(status: number, body?: T, headers?: Record<string, string>): Reply<T> {
  return new Reply(status, body, headers);
}

export interface HandlerContext {
  principal: Principal;
  meta: RequestMeta;
  requestId: string;
  /** W3C traceparent from the caller, if any. */
  traceparent?: string;
}

export type Handler<O extends AnyOperation> = (
  input: OperationInput<O>,
  ctx: HandlerContext,
) => Promise<OperationReplyBody<O> | Reply<unknown>> | OperationReplyBody<O> | Reply<unknown>;

/** What serves an internal call: its validated request in, its reply body out. */
export type InternalHandler<Q extends z.ZodType, R extends z.ZodType> = (
  request: z.infer<Q>,
  ctx: HandlerContext,
) => Promise<z.infer<R>> | z.infer<R>;

export interface CallContext {
  requestId?: string;
  principal?: Principal;
  meta?: RequestMeta;
  traceparent?: string;
  /** The request's deadline: every attempt of it ends within this time. */
  timeoutMs?: number;
  /** The HTTP path the request came on (a problem's `instance`). */
  instance?: string;
}

/** How one request is sent: the service that answers it, whether it is signed for it, and whether it may be repeated. */
interface Route {
  owner: string;
  /** A public operation: signed with the owner's key (signature.ts). */
  signed: boolean;
  /** Sent again after a timeout (see retry.ts). */
  repeatable: boolean;
}

export interface ServiceBusOptions {
  /** Turns retries on: how long one attempt of a request that is safe to repeat waits before it is sent again. */
  attemptTimeoutMs?: number;
  /**
   * This process's bus key (signature.ts): the gateway's signs the public operations it sends; a service's checks that
   * the public operations it serves were signed by the gateway. Needed to serve or send a public operation.
   */
  key?: BusKey;
  /**
   * Requests this process serves at once at most (each item of a batch counts): one more is answered at once with a
   * 503 and `Retry-After: 1` instead of waiting behind the others (a slow database then sheds load, never piles it up).
   */
  maxInFlight?: number;
}

/**
 * The header of a request's deadline (epoch milliseconds): the caller stops waiting then. A request that reaches its
 * handler after it is not served (answered 504, which nobody reads): its caller has given up, and the work would only
 * take the place of requests that can still be answered. Clocks of the hosts are assumed in step (NTP).
 */
export const DEADLINE_HEADER = 'x-deadline';

export interface CallResult<T = unknown> {
  status: number;
  body: T;
  headers?: Record<string, string>;
}

function parsePart(schema: z.ZodType | undefined, value: unknown, where: 'params' | 'query' | 'body'): unknown {
  if (!schema) return where === 'body' ? undefined : {};
  const r = schema.safeParse(value ?? (where === 'body' ? undefined : {}));
  if (!r.success)
    throw validationError(r.error, where, namesUnknownVariant(r.error, value) ? 'unprocessable_entity' : 'bad_request');
  return r.data;
}

/**
 * A well-formed request that names a variant the union does not know (a string discriminator such as an
 * unknown `entityType`) is unprocessable (422) rather than malformed (400).
 */
function namesUnknownVariant(error: z.ZodError, value: unknown): boolean {
  return error.issues.every((issue) => {
    if (issue.code !== 'invalid_union' || !('discriminator' in issue)) return false;
    let at: unknown = value;
    for (const key of issue.path)
      at = at !== null && typeof at === 'object' ? (at as Record<PropertyKey, unknown>)[key] : undefined;
    return typeof at === 'string';
  });
}

/** Every internal request carries this principal: the caller is a service, named by its NATS identity, not a user. */
const INTERNAL_PRINCIPAL: Principal = { kind: 'anonymous' };

/** Parses params, query and body against the operation's schemas; throws a 400 AppError listing every issue. */
export function parseOperationInput<O extends AnyOperation>(
  op: O,
  raw: { params?: unknown; query?: unknown; body?: unknown },
): OperationInput<O> {
  return {
    params: parsePart(op.params, raw.params, 'params'),
    query: parsePart(op.query, raw.query, 'query'),
    body: parsePart(op.body, raw.body, 'body'),
  } as OperationInput<O>;
}

export function errorToWire(err: unknown, instance?: string, requestId?: string): WireReply {
  if (err instanceof AppError) {
    return { ok: false, problem: err.toProblem({ instance, requestId }), headers: err.headers };
  }
  log.error({ err, requestId }, 'unhandled error in handler');
  return { ok: false, problem: buildProblem('internal_server_error', GENERIC_5XX_DETAIL, { instance, requestId }) };
}

/** A handler's answer as the bus sends it. */
export type OperationSuccess = Extract<WireReply, { ok: true }>;
type HandlerRun = (input: OperationInput<AnyOperation>, ctx: HandlerContext) => Promise<OperationSuccess>;

/** Wraps every served operation (see ServiceBus.intercept); `next` runs the handler, it throws what the handler throws. */
export type Interceptor = (
  op: AnyOperation,
  input: OperationInput<AnyOperation>,
  ctx: HandlerContext,
  next: () => Promise<OperationSuccess>,
) => Promise<OperationSuccess>;

export class ServiceBus {
  private readonly subs: Subscription[] = [];
  private readonly handlers = new Map<string, HandlerRun>();
  private interceptor?: Interceptor;
  private inFlight = 0;
  private drainedResolve?: () => void;
  private readonly requests: RequestMux;

  constructor(
    readonly nc: NatsConnection,
    readonly service: string,
    private readonly defaultTimeoutMs = 10_000,
    private readonly options: ServiceBusOptions = {},
  ) {
    this.requests = new RequestMux(nc);
  }

  /** Serves an operation on its subject with queue group = service name, so replicas share the load. */
  handle<O extends AnyOperation>(op: O, handler: Handler<O>): void {
    const key = this.options.key?.keyFor(op.service);
    if (!key)
      throw new Error(
        `${this.service} cannot serve ${op.operationId} (${op.subject}): it has no bus key of ${op.service} to check that requests come from the gateway (BUS_KEY_FILE)`,
      );
    const run = async (input: OperationInput<O>, ctx: HandlerContext): Promise<OperationSuccess> => {
      const result = await handler(input, ctx);
      if (result instanceof Reply)
        return { ok: true, status: result.status, body: result.body, headers: result.headers };
      return { ok: true, status: op.reply.status, body: result };
    };
    this.handlers.set(op.operationId, run as HandlerRun);
    this.serve(
      op.subject,
      async (wire, hdrs) => {
        const input = parseOperationInput(op, wire);
        const ctx = handlerContext(wire, hdrs);
        const intercept = this.interceptor;
        return intercept ? intercept(op, input, ctx, () => run(input, ctx)) : run(input, ctx);
      },
      key,
    );
  }

  /**
   * Puts `interceptor` around every operation this bus serves (registered before or after): it gets the validated
   * input and runs the handler with `next`. One per bus (management's audit log uses it).
   */
  intercept(interceptor: Interceptor): void {
    if (this.interceptor) throw new Error(`${this.service}: an interceptor is already set`);
    this.interceptor = interceptor;
  }

  /** Runs the handler registered for `op` in this process, without the interceptor; undefined when none is. */
  invokeLocal(
    op: AnyOperation,
    input: OperationInput<AnyOperation>,
    ctx: HandlerContext,
  ): Promise<OperationSuccess> | undefined {
    return this.handlers.get(op.operationId)?.(input, ctx);
  }

  /**
   * Serves an internal call this service owns (queue group = service): the request body is parsed with the call's
   * request schema (bad input: the 400 validation problem of the public path), and the handler's value is the reply
   * body (status 200). Throws at startup for a call another service owns.
   */
  serveInternal<Q extends z.ZodType, R extends z.ZodType>(
    def: InternalCallDef<Q, R>,
    handler: InternalHandler<Q, R>,
  ): void {
    if (def.owner !== this.service)
      throw new Error(`${this.service} cannot serve ${def.name} (${def.subject}): it is owned by ${def.owner}`);
    this.serve(def.subject, async (wire, hdrs) => {
      const request = parsePart(def.request, wire.body, 'body') as z.infer<Q>;
      // An internal call has no principal: whatever a message says, its handler sees the internal one.
      return {
        ok: true,
        status: 200,
        body: await handler(request, handlerContext({ ...wire, principal: INTERNAL_PRINCIPAL }, hdrs)),
      };
    });
  }

  /**
   * Serves a subject (queue group = service) with request-context restore and error mapping, a request at a time or a
   * batch of them (request-mux.ts). With `key`, only requests signed with it are served (public operations: signed by
   * the gateway); the others are answered 403.
   */
  private serve(subject: string, fn: ServeFn, key?: Buffer): void {
    const check = key
      ? (payload: Uint8Array, signature: string | undefined) => verifyRequest(key, subject, payload, signature)
      : undefined;
    // A callback, not an async iterator: no promise per message before the handler starts.
    const sub = this.nc.subscribe(subject, {
      queue: this.service,
      callback: (err, msg) => {
        if (err) log.warn({ err: err.message, subject }, 'subscription ended with an error');
        else void this.dispatch(subject, msg, fn, check);
      },
    });
    this.subs.push(sub);
  }

  private async dispatch(subject: string, msg: Msg, fn: ServeFn, check?: SignatureCheck) {
    const hdrs = headerMap(msg.headers);
    const signed = !check || check(msg.data, hdrs[SIGNATURE_HEADER]);
    const served = signed ? fn : refuseUnsigned(subject);
    if (hdrs[BATCH_HEADER]) {
      await this.dispatchBatch(subject, msg, served);
      return;
    }
    const out = await this.serveOne(subject, hdrs, () => decode<WireRequest>(msg.data), served);
    if (!msg.reply) return;
    try {
      const { text, headers } = replyParts(out);
      msg.respond(encodeText(text), headers ? { headers: headersOf(headers) } : undefined);
    } catch (err) {
      log.warn({ err }, 'could not send reply');
    }
  }

  /**
   * A batch: its requests served concurrently, each as if it had come alone (a batch is signed, or refused, whole),
   * answered in one message, or each on its own reply subject when together they would pass the server's largest
   * payload.
   */
  private async dispatchBatch(subject: string, msg: Msg, fn: ServeFn) {
    const items = readFrame(msg.data);
    if (!items) {
      log.warn({ subject }, 'a batch that is not a frame of requests; dropped');
      return;
    }
    natsBatchedRequests().observe({ subject }, items.length);
    const outs = await Promise.all(
      items.map((item) => this.serveOne(subject, item.headers?.values ?? {}, () => decode<WireRequest>(item.data), fn)),
    );
    const parts = outs.map(replyParts);
    try {
      const frame = writeFrame(parts);
      if (msg.reply && frame.length <= (this.nc.info?.max_payload ?? 1024 * 1024)) {
        msg.respond(frame, { headers: headersOf({ [BATCH_HEADER]: String(parts.length) }) });
        return;
      }
      parts.forEach((p, i) => {
        const reply = items[i]?.reply;
        if (reply)
          this.nc.publish(reply, encodeText(p.text), p.headers ? { headers: headersOf(p.headers) } : undefined);
      });
    } catch (err) {
      log.warn({ err }, 'could not send reply');
    }
  }

  /** One request: its span, log context, handler and reply (an error becomes its problem), and the request metrics. */
  private async serveOne(
    subject: string,
    hdrs: Record<string, string>,
    wireOf: () => WireRequest,
    fn: ServeFn,
  ): Promise<WireReply> {
    const refused = this.refusal(hdrs);
    if (refused) {
      natsRequestsRefused().inc({ subject, reason: refused.status === 503 ? 'busy' : 'late' });
      return errorToWire(refused, hdrs['x-instance'], hdrs['x-request-id']);
    }
    this.inFlight++;
    const started = process.hrtime.bigint();
    let outcome = 'ok';
    // The caller's trace context (W3C traceparent header) is the parent of this service's span.
    const attributes = {
      'messaging.system': 'nats',
      'messaging.destination.name': subject,
      'request.id': hdrs['x-request-id'] ?? 'internal',
    };
    try {
      return await inSpan(
        subject,
        { kind: SpanKind.SERVER, parent: contextFromHeaders(hdrs), attributes },
        async (span) => {
          const ctx: RequestContext = { requestId: hdrs['x-request-id'] ?? 'internal' };
          if (hdrs['x-tenant-id']) ctx.tenantId = hdrs['x-tenant-id'];
          if (hdrs['x-project-id']) ctx.projectId = hdrs['x-project-id'];
          const traceId = currentTraceId() ?? hdrs['traceparent']?.split('-')[1];
          if (traceId) ctx.traceId = traceId;
          return runWithContext(ctx, async () => {
            let out: WireReply;
            try {
              const wire = wireOf();
              // Debug only; bodies and secret-looking values are redacted by the logger.
              log.debug({ subject, input: wire }, 'request received');
              out = await fn(wire, hdrs);
            } catch (err) {
              out = errorToWire(err, hdrs['x-instance'], ctx.requestId);
            }
            if (!out.ok) {
              outcome = out.problem.status >= 500 ? 'error' : 'rejected';
              span.setAttribute('problem.status', out.problem.status);
              if (out.problem.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
            }
            return out;
          });
        },
      );
    } finally {
      natsRequestDuration().observe({ subject, outcome }, Number(process.hrtime.bigint() - started) / 1e9);
      this.inFlight--;
      if (this.inFlight === 0 && this.drainedResolve) this.drainedResolve();
    }
  }

  /** Why a request is not served: this process is at its bound of requests in flight, or the request's deadline passed. */
  private refusal(hdrs: Record<string, string>): AppError | undefined {
    const max = this.options.maxInFlight;
    if (max !== undefined && this.inFlight >= max) return tryAgainShortly('The service is busy; try again shortly');
    const deadline = Number(hdrs[DEADLINE_HEADER]);
    if (deadline > 0 && Date.now() > deadline)
      return new AppError('gateway_timeout', 'The request was not served before its deadline');
    return undefined;
  }

  /** Calls an operation's owning service and returns its reply; a problem reply becomes an AppError. */
  async call<O extends AnyOperation>(
    op: O,
    request: OperationRequest<O>,
    ctx: CallContext = {},
  ): Promise<CallResult<OperationReplyBody<O>>> {
    const wire: WireRequest = {
      params: request.params,
      query: request.query,
      body: request.body,
      principal: ctx.principal ?? { kind: 'admin', via: 'bearer' },
      meta: ctx.meta,
    };
    const reply = await this.send(op, wire, { instance: op.path, ...ctx });
    if (!reply.ok) throw AppError.fromProblem(reply.problem, reply.headers);
    return { status: reply.status, body: bodyOf(reply) as OperationReplyBody<O>, headers: reply.headers };
  }

  /**
   * Sends a public operation to its owning service (signed with that service's key: only the gateway's bus key has
   * them) and answers the reply as it came, a problem included. Sent again within the deadline when no replica received
   * it, and after a timeout when the operation is safe to repeat (its declaration, `gatewayMayRepeat`).
   */
  send(op: AnyOperation, wire: WireRequest, ctx: CallContext = {}): Promise<WireReply> {
    return this.request(op.subject, wire, ctx, {
      owner: op.service,
      signed: true,
      repeatable: gatewayMayRepeat(op, wire.body),
    });
  }

  /**
   * Calls an internal call of another service and answers its reply body, parsed with the call's reply schema; a
   * problem reply becomes an AppError, and a reply that does not match the schema a 502 (`bad_gateway`, cause logged).
   * Sent again after a timeout (on a bus with retries) only when the call is declared `repeatable`.
   */
  async callInternal<Q extends z.ZodType, R extends z.ZodType>(
    def: InternalCallDef<Q, R>,
    request: z.input<Q>,
    ctx: InternalCallContext = {},
  ): Promise<z.infer<R>> {
    const route = { owner: def.owner, signed: false, repeatable: def.repeatable === true };
    const reply = await this.request(def.subject, { principal: INTERNAL_PRINCIPAL, body: request }, ctx, route);
    if (!reply.ok) throw AppError.fromProblem(reply.problem, reply.headers);
    let body: unknown;
    try {
      body = bodyOf(reply);
    } catch (err) {
      log.error(
        { call: def.name, subject: def.subject, owner: def.owner, err: (err as Error).message },
        'internal reply is not JSON',
      );
      throw new AppError('bad_gateway', GENERIC_5XX_DETAIL, { cause: err });
    }
    const parsed = def.reply.safeParse(body);
    if (!parsed.success) {
      const issues = parsed.error.issues.slice(0, 5).map((i) => `/${i.path.map(String).join('/')}: ${i.message}`);
      log.error(
        { call: def.name, subject: def.subject, owner: def.owner, issues },
        'internal reply does not match its declaration',
      );
      throw new AppError('bad_gateway', GENERIC_5XX_DETAIL, { cause: parsed.error });
    }
    return parsed.data;
  }

  /**
   * Sends a wire request and answers the reply. On a bus with `attemptTimeoutMs` (the gateway's), a request nobody
   * received is sent again within the deadline, and one that may have been received (a timeout) when it is safe to
   * repeat.
   */
  private request(subject: string, wire: WireRequest, ctx: CallContext, route: Route): Promise<WireReply> {
    const { attemptTimeoutMs } = this.options;
    // Buses without an attempt timeout (the services' own calls) never send a request twice.
    const policy: RetryPolicy | undefined =
      attemptTimeoutMs === undefined ? undefined : { repeatable: route.repeatable, attemptTimeoutMs };
    return withRetries(subject, ctx.timeoutMs ?? this.defaultTimeoutMs, policy, (timeoutMs) =>
      this.requestOnce(subject, wire, { ...ctx, timeoutMs }, route),
    );
  }

  private async requestOnce(subject: string, wire: WireRequest, ctx: CallContext, route: Route): Promise<WireReply> {
    const current = currentContext();
    // A caller-given traceparent (a message from elsewhere) is the parent; otherwise the active span is.
    const parent = ctx.traceparent ? contextFromHeaders({ traceparent: ctx.traceparent }) : undefined;
    return inSpan(
      `send ${subject}`,
      {
        kind: SpanKind.CLIENT,
        parent,
        attributes: { 'messaging.system': 'nats', 'messaging.destination.name': subject },
      },
      async () => {
        if (!natsReachable(this.nc)) {
          throw markUndelivered(
            tryAgainShortly('The message bus is not reachable; try again shortly'),
            'not-delivered',
          );
        }
        try {
          const timeoutMs = ctx.timeoutMs ?? this.defaultTimeoutMs;
          const headers = definedValues({
            'x-request-id': ctx.requestId ?? current?.requestId ?? 'internal',
            ...traceHeaders(),
            'x-instance': ctx.instance || undefined,
            [DEADLINE_HEADER]: String(Date.now() + timeoutMs),
          });
          const signWith = route.signed ? this.signingKey(route.owner) : undefined;
          const msg = await this.requests.send(
            subject,
            { text: JSON.stringify(wire), headers, signWith, owner: route.owner },
            { timeout: timeoutMs },
          );
          return readReply(msg);
        } catch (err) {
          throw markUndelivered(natsErrorToAppError(err, subject), undeliveredFromNats(err));
        }
      },
    );
  }

  /** The key a public operation of `owner` is signed with; only the gateway's bus key has it. */
  private signingKey(owner: string): Buffer {
    const key = this.options.key?.keyFor(owner);
    if (!key)
      throw new AppError('internal_server_error', GENERIC_5XX_DETAIL, {
        cause: new Error(`${this.service} has no bus key to send ${owner}'s public operations`),
      });
    return key;
  }

  /** Stops taking new requests and waits (up to `graceMs`) for the ones in flight. */
  async drain(graceMs = 20_000): Promise<void> {
    for (const s of this.subs) {
      try {
        await s.drain();
      } catch {
        /* connection may already be closed */
      }
    }
    if (this.inFlight > 0) {
      await Promise.race([
        new Promise<void>((r) => (this.drainedResolve = r)),
        new Promise<void>((r) => setTimeout(r, graceMs).unref()),
      ]);
    }
  }
}

/** What an internal call may set: its request id, trace context and deadline (the principal and retries are the declaration's). */
export type InternalCallContext = Pick<CallContext, 'requestId' | 'traceparent' | 'timeoutMs'>;

/** The handler's view of a request: who sent it (as the gateway authenticated it), its metadata and ids. */
function handlerContext(wire: WireRequest, hdrs: Record<string, string>): HandlerContext {
  const requestId = hdrs['x-request-id'] ?? 'internal';
  const principal = Principal.parse(wire.principal ?? { kind: 'anonymous' });
  return { principal, meta: wire.meta ?? {}, requestId, traceparent: currentTraceparent() ?? hdrs['traceparent'] };
}

/** The named values that are set (a header record without the undefined ones). */
function definedValues(values: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(values)) if (v !== undefined) out[k] = v;
  return out;
}

/** What serves a subject: the request and its headers (by lower-cased name) in, the reply out. */
type ServeFn = (wire: WireRequest, headers: Record<string, string>) => Promise<WireReply>;

/** Whether a request's payload carries a valid signature (the service's bus key; see signature.ts). */
type SignatureCheck = (payload: Uint8Array, signature: string | undefined) => boolean;

/**
 * What answers a public operation's request that the gateway did not sign: 403, and an error in the log (either the
 * permission table lets someone else publish there, or a gateway runs with another credential set's key).
 */
function refuseUnsigned(subject: string): ServeFn {
  return async (_wire, hdrs) => {
    log.error(
      { subject, requestId: hdrs['x-request-id'] },
      'refused a public operation without a valid gateway signature',
    );
    throw new AppError('forbidden', 'Public operations are accepted only from the gateway');
  };
}

export function natsErrorToAppError(err: unknown, subject: string): AppError {
  const code = (err as NatsError)?.code;
  if (code === ErrorCode.NoResponders || code === '503') {
    return tryAgainShortly('The service that owns this operation is not available; try again shortly');
  }
  if (code === ErrorCode.Timeout || code === 'TIMEOUT') {
    return new AppError('gateway_timeout', 'The service that owns this operation did not answer in time');
  }
  if (
    code === ErrorCode.Disconnect ||
    code === ErrorCode.ConnectionClosed ||
    code === 'CONNECTION_CLOSED' ||
    code === 'CONNECTION_DRAINING'
  ) {
    return tryAgainShortly('The message bus is not reachable; try again shortly');
  }
  log.error({ err, subject }, 'nats request failed');
  return tryAgainShortly('The message bus could not carry the request; try again shortly');
}
