import { VERIFY_SUBJECT_TOKEN_SUBJECT, VerifySubjectTokenRequest } from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';
import { validationError } from '@platform/problems';
import type { AuthenticateDeps } from '../domain/authenticate';
import { verifySubjectToken } from '../domain/subject-tokens';

/** The credential gateway asks whether a token exchange's subject token is a valid credential of an app. */
export function registerSubjectTokenHandler(bus: ServiceBus, deps: AuthenticateDeps) {
  bus.serve(VERIFY_SUBJECT_TOKEN_SUBJECT, async (wire) => {
    const req = VerifySubjectTokenRequest.safeParse(wire.body);
    if (!req.success) throw validationError(req.error, 'body');
    return { ok: true, status: 200, body: await verifySubjectToken(deps, req.data) };
  });
}
