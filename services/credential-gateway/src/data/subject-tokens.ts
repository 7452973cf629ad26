import { type VerifySubjectTokenReply, verifySubjectToken } from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';

/** Asks run-auth whether a subject token is a valid credential of an app. */
export function subjectTokenVerifier(bus: ServiceBus) {
  return {
    async verify(token: string, appId: string): Promise<VerifySubjectTokenReply> {
      return bus.callInternal(verifySubjectToken, { token, appId });
    },
  };
}
export type SubjectTokenVerifier = ReturnType<typeof subjectTokenVerifier>;
