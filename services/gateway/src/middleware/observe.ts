import type { NextFunction, Request, Response } from 'express';
import type { AnyOperation } from '@platform/contracts';
import { getLogger, runWithContext } from '@platform/logger';
import {
  SpanKind,
  SpanStatusCode,
  context,
  contextFromHeaders,
  httpRequestDuration,
  httpRequestsTotal,
  trace,
  tracer,
} from '@platform/telemetry';

const log = getLogger('gateway.http');

/**
 * One span per request (a child of the caller's W3C `traceparent`, if sent), the request id and trace id in the
 * log context of everything that follows, and `http_requests_total` / `http_request_duration_seconds` by operation
 * (the operationId, or `unmatched` for paths that are no operation, so the label set stays bounded).
 */
export function observe(listener: string) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const started = process.hrtime.bigint();
    const parent = contextFromHeaders(req.headers, context.active());
    const requestId = res.locals.requestId as string;
    const span = tracer().startSpan(
      `${req.method} ${listener}`,
      {
        kind: SpanKind.SERVER,
        attributes: { 'http.request.method': req.method, 'url.path': req.path, 'request.id': requestId },
      },
      parent,
    );
    const active = trace.setSpan(parent, span);
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      const op = res.locals.operation as AnyOperation | undefined;
      const operation = op?.operationId ?? 'unmatched';
      const status = res.writableFinished ? res.statusCode : 499;
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      httpRequestsTotal().inc({ operation, status: String(status) });
      httpRequestDuration().observe({ operation }, seconds);
      if (op) span.updateName(`${req.method} ${op.path}`);
      span.setAttributes({ 'http.response.status_code': status, 'operation.id': operation });
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      // The request's own log line is a debug one: off (the default level) it costs no context and no object.
      if (status < 500 && !log.isLevelEnabled('debug')) return;
      context.with(active, () =>
        runWithContext({ requestId, traceId: span.spanContext().traceId }, () =>
          status >= 500
            ? log.warn(
                { method: req.method, path: req.path, operation, status, durationMs: Math.round(seconds * 1000) },
                'request answered with a server error',
              )
            : log.debug(
                {
                  method: req.method,
                  path: req.path,
                  operation,
                  status,
                  durationMs: Math.round(seconds * 1000),
                  headers: req.headers,
                },
                'request',
              ),
        ),
      );
    };
    res.once('finish', finish);
    res.once('close', finish);
    context.with(active, () => runWithContext({ requestId, traceId: span.spanContext().traceId }, () => next()));
  };
}
