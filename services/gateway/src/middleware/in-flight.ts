import type { RequestHandler } from 'express';
import { tryAgainShortly } from '@platform/problems';

/**
 * At most `max` requests of a listener in the gateway at once: one more is answered at once with 503 and
 * `Retry-After: 1`, instead of waiting in memory behind the others while a service or its database is slow. A request
 * counts from its start to its answer (or to its client going away).
 */
export function boundInFlight(max: number): RequestHandler {
  let inFlight = 0;
  return (_req, res, next) => {
    if (inFlight >= max) {
      next(tryAgainShortly('The gateway is busy; try again shortly'));
      return;
    }
    inFlight++;
    let counted = true;
    const done = () => {
      if (counted) inFlight--;
      counted = false;
    };
    res.once('finish', done).once('close', done);
    next();
  };
}
