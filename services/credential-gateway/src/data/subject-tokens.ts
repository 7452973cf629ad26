import { VERIFY_SUBJECT_TOKEN_SUBJECT, VerifySubjectTokenReply } from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';

/** Asks run-auth whether a subject token is a valid credential of an app. */
export function subjectTokenVerifier(bus: ServiceBus) {
  return {
    async verify(token: string, appId: string): Promise<VerifySubjectTokenReply> {
      const res = await bus.requestWire(VERIFY_SUBJECT_TOKEN_SUBJECT, { principal: { kind: 'anonymous' }, body: { token, appId } });
      return VerifySubjectTokenReply.parse(res.body);
    },
  };
}
export type SubjectTokenVerifier = ReturnType<typeof subjectTokenVerifier>;
