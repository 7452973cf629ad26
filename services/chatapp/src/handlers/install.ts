import { chatappCreateInstallLink, chatappInstall, chatappOAuthRedirect } from '@platform/contracts';
import { reply, type ServiceBus } from '@platform/bus';
import type { ChatappDeps } from '../domain/deps';
import { finishInstall, mintInstallLink, startInstall } from '../domain/install';

/** Both answer 302 with `Location`; the gateway ends the response for a 302. */
export function registerInstallHandlers(bus: ServiceBus, deps: ChatappDeps) {
  bus.handle(chatappCreateInstallLink, ({ body }, ctx) =>
    reply(201, { data: mintInstallLink(deps, ctx.principal, body, ctx.meta.baseUrl) }),
  );
  bus.handle(chatappInstall, async ({ query }, ctx) =>
    reply(302, undefined, { location: await startInstall(deps, query, ctx.meta.baseUrl), 'cache-control': 'no-store' }),
  );
  bus.handle(chatappOAuthRedirect, async ({ query }, ctx) =>
    reply(302, undefined, {
      location: await finishInstall(deps, query, ctx.meta.baseUrl),
      'cache-control': 'no-store',
    }),
  );
}
