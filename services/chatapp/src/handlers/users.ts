import {
  chatappConnectUser,
  chatappCreateLinkToken,
  chatappDisconnectUser,
  chatappLinkStatus,
  chatappUserStatus,
  chatappVerifyLinkToken,
  completeLinkSession as completeLinkSessionCall,
} from '@platform/contracts';
import { reply, type ServiceBus } from '@platform/bus';
import type { ChatappDeps } from '../domain/deps';
import {
  completeLinkSession,
  connectUser,
  createLinkToken,
  disconnectUser,
  linkStatus,
  userStatus,
  verifyLinkToken,
} from '../domain/users';

export function registerUserHandlers(bus: ServiceBus, deps: ChatappDeps) {
  bus.handle(chatappConnectUser, ({ body }, ctx) => connectUser(deps, ctx.principal, body));
  bus.handle(chatappDisconnectUser, ({ body }, ctx) => disconnectUser(deps, ctx.principal, body));
  bus.handle(chatappLinkStatus, ({ query }, ctx) => linkStatus(deps, ctx.principal, query));
  bus.handle(chatappVerifyLinkToken, ({ body }, ctx) => verifyLinkToken(deps, ctx.principal, body));
  bus.handle(chatappUserStatus, ({ query }, ctx) => userStatus(deps, ctx.principal, query));
  bus.handle(chatappCreateLinkToken, async ({ params, body }, ctx) =>
    reply(201, await createLinkToken(deps, ctx.principal, params.teamId, body)),
  );

  /** Internal: the bot side completes a link session (the internal call completeLinkSession). */
  bus.serveInternal(completeLinkSessionCall, (req) => completeLinkSession(deps, req));
}
