import type { Request } from 'express';
import type { AnyOperation, Principal } from '@platform/contracts';
import { AppError } from '@platform/problems';

const SAFE_METHODS = new Set(['get', 'head', 'options']);
/** `none`: the user made the request themselves (typed the address, a bookmark); never a page of another origin. */
const OWN_SITES = new Set(['same-origin', 'none']);

/**
 * Refuses an unsafe request (POST, PUT, PATCH, DELETE) authenticated by the session cookie when a browser says it
 * comes from another origin: the browser attaches the cookie to requests any page of the same site (another port, a
 * sibling subdomain) makes, so the cookie alone does not prove the user meant it. The browser's Fetch Metadata
 * (`Sec-Fetch-Site`) decides; without it, the `Origin` header must be the gateway's own origin. A request with
 * neither is not from a browser page (curl, scripts) and goes on. Bearer-authenticated requests are not affected: a
 * page cannot make the browser add an `Authorization` header on its own.
 */
export function assertSameOriginCookieWrite(
  op: AnyOperation,
  principal: Principal,
  req: Request,
  baseUrl: string,
): void {
  if (SAFE_METHODS.has(op.method)) return;
  if ((principal.kind !== 'admin' && principal.kind !== 'user') || principal.via !== 'cookie') return;
  const site = req.headers['sec-fetch-site'];
  const origin = req.headers.origin;
  const sameOrigin =
    typeof site === 'string' ? OWN_SITES.has(site) : origin === undefined || origin === originOf(baseUrl);
  if (!sameOrigin) {
    throw new AppError(
      'forbidden',
      'Cross-origin requests that change something are refused with the session cookie: send them from the same origin, or with a bearer token',
    );
  }
}

/** The gateway's own origin, as browsers name it in `Origin`: from PUBLIC_BASE_URL, else the request's scheme and host. */
function originOf(baseUrl: string): string {
  try {
    return new URL(baseUrl).origin;
  } catch {
    return baseUrl;
  }
}
