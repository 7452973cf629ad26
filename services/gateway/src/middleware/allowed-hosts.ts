import type { NextFunction, Request, Response } from 'express';
import { AppError } from '@platform/problems';

/**
 * Refuses requests for a host the gateway is not configured for (ALLOWED_HOSTS, comma-separated names): without
 * PUBLIC_BASE_URL the base URL of links, redirects and cookie flags is built from the request's Host, so only the
 * listed hosts may name it. `req.hostname` is the Host header without its port (X-Forwarded-Host behind a trusted proxy).
 */
export function allowedHosts(list: string) {
  const allowed = new Set(
    list
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
  );
  return (req: Request, _res: Response, next: NextFunction) => {
    const host = (req.hostname ?? '').toLowerCase();
    if (allowed.has(host)) next();
    else next(new AppError('bad_request', 'This gateway does not answer for that Host'));
  };
}
