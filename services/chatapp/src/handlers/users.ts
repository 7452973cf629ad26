import {
  chatappConnectUser,
  chatappCreateLinkToken,
  chatappDisconnectUser,
  chatappLinkStatus,
  chatappUserStatus,
  chatappVerifyLinkToken,
  COMPLETE_LINK_SESSION_SUBJECT,
  CompleteLinkSessionRequest,
} from '@platform/contracts';
import { reply, type ServiceBus } from '@platform/bus';
import { validationError } from '@platform/problems';
import type { ChatappDeps } from '../domain/deps';
import { completeLinkSession, connectUser, createLinkToken, disconnectUser, linkStatus, userStatus, verifyLinkToken } from '../domain/users';

export function registerUserHandlers(bus: ServiceBus, deps: ChatappDeps) {
  bus.handle(chatappConnectUser, ({ body }, ctx) => connectUser(deps, ctx.principal, body));
  bus.handle(chatappDisconnectUser, ({ body }, ctx) => disconnectUser(deps, ctx.principal, body));
  bus.handle(chatappLinkStatus, ({ query }, ctx) => linkStatus(deps, ctx.principal, query));
  bus.handle(chatappVerifyLinkToken, ({ body }, ctx) => verifyLinkToken(deps, ctx.principal, body));
  bus.handle(chatappUserStatus, ({ query }, ctx) => userStatus(deps, ctx.principal, query));
  bus.handle(chatappCreateLinkToken, async ({ params, body }, ctx) => reply(201, await createLinkToken(deps, ctx.principal, params.teamId, body)));

  /** Internal: the bot side completes a link session (see COMPLETE_LINK_SESSION_SUBJECT). */
  bus.serve(COMPLETE_LINK_SESSION_SUBJECT, async (wire) => {
    const parsed = CompleteLinkSessionRequest.safeParse(wire.body);
    if (!parsed.success) throw validationError(parsed.error, 'body');
    return { ok: true, status: 200, body: await completeLinkSession(deps, parsed.data) };
  });
}
