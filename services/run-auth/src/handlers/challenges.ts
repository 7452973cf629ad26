import { getChallenge, getLegacyPowChallenge, postChallenge, verifyChallenge } from '@platform/contracts';
import type { HandlerContext, ServiceBus } from '@platform/bus';
import {
  issueChallenge,
  issueLegacyChallenge,
  receiveInteraction,
  verifyChallengeSolution,
  type Caller,
  type ChallengeDeps,
} from '../domain/challenges';

const caller = (ctx: HandlerContext): Caller => ({
  ip: ctx.meta.ip,
  origin: ctx.meta.origin,
  userAgent: ctx.meta.userAgent,
});

export function registerChallengeHandlers(bus: ServiceBus, deps: ChallengeDeps) {
  bus.handle(
    getChallenge,
    async ({ query }, ctx) => (await issueChallenge(deps, query.appId, query.endpointClass, caller(ctx))) as never,
  );
  bus.handle(
    postChallenge,
    async ({ query, body }, ctx) => (await receiveInteraction(deps, query.appId, body, caller(ctx))) as never,
  );
  bus.handle(
    verifyChallenge,
    async ({ query, body }, ctx) => (await verifyChallengeSolution(deps, query.appId, body, caller(ctx))) as never,
  );
  bus.handle(getLegacyPowChallenge, async (_input, ctx) => (await issueLegacyChallenge(deps, caller(ctx))) as never);
}
