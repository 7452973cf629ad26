import { authenticateRun as authenticateRunCall } from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';
import { authenticateRun, type AuthenticateDeps } from '../domain/authenticate';

export function registerAuthenticateHandler(bus: ServiceBus, deps: AuthenticateDeps) {
  bus.serveInternal(authenticateRunCall, async (req) => ({ principal: await authenticateRun(deps, req) }));
}
