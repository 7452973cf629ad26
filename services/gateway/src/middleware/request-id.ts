import type { NextFunction, Request, Response } from 'express';
import { randomId } from '@platform/secrets';

const VALID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Keeps a valid caller `x-request-id`, else makes one; echoed as `X-Request-ID`. */
export function requestId(req: Request, res: Response, next: NextFunction): void {
  const incoming = req.headers['x-request-id'];
  const id = typeof incoming === 'string' && VALID.test(incoming) ? incoming : `req_${randomId(20)}`;
  res.locals.requestId = id;
  res.setHeader('X-Request-ID', id);
  next();
}
