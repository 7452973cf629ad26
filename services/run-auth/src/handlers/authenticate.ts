import { AUTHENTICATE_RUN_SUBJECT, AuthenticateRunRequest } from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';
import { authenticateRun, type AuthenticateDeps } from '../domain/authenticate';

export function registerAuthenticateHandler(bus: ServiceBus, deps: AuthenticateDeps) {
  bus.serve(AUTHENTICATE_RUN_SUBJECT, async (wire) => {
    const req = AuthenticateRunRequest.parse(wire.body);
    return { ok: true, status: 200, body: { principal: await authenticateRun(deps, req) } };
  });
}
