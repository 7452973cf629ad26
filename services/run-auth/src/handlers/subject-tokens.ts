import { verifySubjectToken as verifySubjectTokenCall } from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';
import type { AuthenticateDeps } from '../domain/authenticate';
import { verifySubjectToken } from '../domain/subject-tokens';

/** The credential gateway asks whether a token exchange's subject token is a valid credential of an app. */
export function registerSubjectTokenHandler(bus: ServiceBus, deps: AuthenticateDeps) {
  bus.serveInternal(verifySubjectTokenCall, (req) => verifySubjectToken(deps, req));
}
