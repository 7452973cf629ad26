import type { NextFunction, Request, RequestHandler, Response } from 'express';
import helmet from 'helmet';

type HelmetOptions = Parameters<typeof helmet>[0];

/**
 * helmet's headers, computed once at start: helmet's answer does not depend on the request (no CSP nonces are
 * configured), so one middleware sets the recorded list instead of a dozen middlewares setting one header each.
 */
export function securityHeaders(options: HelmetOptions): RequestHandler {
  const headers: Array<[string, string]> = [];
  const recorder = {
    setHeader(name: string, value: string | number | readonly string[]) {
      headers.push([name, String(value)]);
    },
    removeHeader() {},
  };
  let finished = false;
  helmet(options)({} as Request, recorder as unknown as Response, () => {
    finished = true;
  });
  // helmet calls next synchronously; anything else would mean it depends on the request after all.
  if (!finished) throw new Error('helmet did not answer synchronously: its headers cannot be computed once');
  return (_req: Request, res: Response, next: NextFunction) => {
    for (const [name, value] of headers) res.setHeader(name, value);
    next();
  };
}
