import type { NextFunction, Request, Response } from 'express';
import type { AnyOperation } from '@platform/contracts';
import { AppError, buildProblem, GENERIC_5XX_DETAIL, type Problem } from '@platform/problems';
import { getLogger } from '@platform/logger';

const log = getLogger('gateway.errors');

/** Maps body-parser and other framework errors to AppErrors. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  const e = err as { type?: string; status?: number; message?: string };
  switch (e?.type) {
    case 'entity.parse.failed':
      return new AppError('bad_request', 'The request body is not valid JSON');
    case 'entity.too.large':
      return new AppError('payload_too_large', 'The request body is larger than this operation accepts');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new AppError('unsupported_media_type', 'The request body encoding is not supported');
    case 'request.aborted':
      return new AppError('bad_request', 'The request was aborted by the client');
    case 'request.size.invalid':
      return new AppError('bad_request', 'The request body size does not match Content-Length');
  }
  if (e?.status && e.status >= 400 && e.status < 500)
    return new AppError('bad_request', 'The request could not be read');
  log.error({ err }, 'unexpected error');
  return new AppError('internal_server_error', GENERIC_5XX_DETAIL);
}

/** Sends an error in the operation's error shape (problem+json by default). */
export function sendError(res: Response, req: Request, err: unknown, op?: AnyOperation): void {
  const appErr = toAppError(err);
  if (res.headersSent) {
    res.end();
    return;
  }
  const requestId = res.locals.requestId as string | undefined;
  for (const [k, v] of Object.entries(appErr.headers ?? {})) res.setHeader(k, v);
  const problem: Problem =
    appErr.status >= 500 && appErr.status !== 503 && appErr.status !== 504 && appErr.status !== 502
      ? buildProblem('internal_server_error', GENERIC_5XX_DETAIL, {
          instance: req.originalUrl.split('?')[0],
          requestId,
        })
      : appErr.toProblem({ instance: req.originalUrl.split('?')[0], requestId });
  if (
    op?.errorBody === 'legacy' &&
    problem.status < 500 &&
    problem.status !== 429 &&
    (!op.legacyErrorStatuses || op.legacyErrorStatuses.includes(problem.status))
  ) {
    res.status(problem.status).json({ details: problem.errors ?? null, error: problem.code, message: problem.detail });
    return;
  }
  if (op?.errorBody === 'oauth' && problem.status < 500) {
    res.setHeader('cache-control', 'no-store');
    res.setHeader('pragma', 'no-cache');
    // RFC 6749 §5.2: a request the token endpoint cannot read (wrong content type) is an invalid_request, status 400.
    res
      .status(problem.status === 415 ? 400 : problem.status)
      .json({ error: appErr.oauthError ?? oauthCode(problem.status), error_description: problem.detail });
    return;
  }
  res.status(problem.status).type('application/problem+json').send(JSON.stringify(problem));
}

function oauthCode(status: number): string {
  return status === 401
    ? 'invalid_client'
    : status === 400
      ? 'invalid_request'
      : status === 403
        ? 'access_denied'
        : 'invalid_request';
}

export function errorMiddleware(err: unknown, req: Request, res: Response, _next: NextFunction): void {
  sendError(res, req, err, res.locals.operation as AnyOperation | undefined);
}
