import { CHALLENGE_SOLUTION_HEADER, createAnonymousSession } from '@platform/contracts';
import type { ServiceBus } from '@platform/bus';
import { startAnonymousSession, type AnonymousSessionDeps } from '../domain/anonymous-sessions';

export function registerAnonymousSessionHandlers(bus: ServiceBus, deps: AnonymousSessionDeps) {
  bus.handle(createAnonymousSession, async ({ params }, ctx) => {
    const auth = ctx.meta.headers?.authorization;
    const bearer = auth ? /^Bearer\s+(\S+)\s*$/i.exec(auth)?.[1] : undefined;
    return startAnonymousSession(deps, params.appId, {
      origin: ctx.meta.origin,
      bearer,
      solution: ctx.meta.headers?.[CHALLENGE_SOLUTION_HEADER],
    });
  });
}
