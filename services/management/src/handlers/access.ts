import { parseCookie, stringifySetCookie } from 'cookie';
import {
  createAccessToken,
  createPlaygroundToken,
  createSession,
  deleteAccessToken,
  deleteMySession,
  deleteSession,
  deleteTenantSession,
  deleteTenantSessions,
  listAccessTokens,
  listMySessions,
  listTenantSessions,
  paged,
  resolveManageCredential,
  verifyPlaygroundToken as verifyPlaygroundTokenCall,
} from '@platform/contracts';
import { reply, type ServiceBus } from '@platform/bus';
import {
  closeSession,
  endMySession,
  endTenantSession,
  endTenantSessions,
  issueAccessToken,
  issuePlaygroundToken,
  listAccessTokensPage,
  listMySessionsPage,
  listTenantSessionsPage,
  openSession,
  resolveBearer,
  resolveSession,
  revokeAccessToken,
  verifyPlaygroundToken,
  type AccessDeps,
} from '../domain/access';

export function registerAccessHandlers(bus: ServiceBus, deps: AccessDeps, cookieName: string) {
  const currentCookie = (ctx: { meta: { headers?: Record<string, string> } }) =>
    ctx.meta.headers?.cookie ? parseCookie(ctx.meta.headers.cookie)[cookieName] : undefined;
  bus.handle(createAccessToken, async ({ params, body }) => ({
    data: await issueAccessToken(deps, params.tenantId, body),
  }));
  bus.handle(listAccessTokens, async ({ params, query }) =>
    paged(query, await listAccessTokensPage(deps, params.tenantId, query.page, query.limit)),
  );
  bus.handle(deleteAccessToken, async ({ params }) => {
    await revokeAccessToken(deps, params.tenantId, params.id);
    return reply(204);
  });
  bus.handle(createSession, async (_input, ctx) => {
    const { session, expiresAt } = await openSession(deps, ctx.principal, ctx.meta);
    const p = ctx.principal as { kind: string; tenantId?: string; role?: string };
    const maxAge = Math.floor((Date.parse(expiresAt) - Date.now()) / 1000);
    // Lax: a cross-site page cannot make the browser send the cookie with a POST, PUT, PATCH or DELETE (the gateway
    // also refuses cross-site unsafe requests made with a cookie, see docs/security.md).
    const secure = ctx.meta.baseUrl?.startsWith('https://') ?? false;
    return reply(
      201,
      { data: { expiresAt, principal: { kind: p.kind, tenantId: p.tenantId, role: p.role } } },
      {
        'set-cookie': stringifySetCookie({
          name: cookieName,
          value: session,
          path: '/',
          httpOnly: true,
          maxAge,
          secure,
          sameSite: 'lax',
        }),
      },
    );
  });
  bus.handle(deleteSession, async (_input, ctx) => {
    const session = currentCookie(ctx);
    if (session) await closeSession(deps, session);
    return reply(204, undefined, {
      'set-cookie': stringifySetCookie({ name: cookieName, value: '', path: '/', httpOnly: true, maxAge: 0 }),
    });
  });
  bus.handle(listMySessions, async ({ query }, ctx) =>
    paged(query, await listMySessionsPage(deps, ctx.principal, query.page, query.limit, currentCookie(ctx))),
  );
  bus.handle(deleteMySession, async ({ params }, ctx) => {
    await endMySession(deps, ctx.principal, params.id);
    return reply(204);
  });
  bus.handle(listTenantSessions, async ({ params, query }, ctx) =>
    paged(query, await listTenantSessionsPage(deps, params.tenantId, query.page, query.limit, currentCookie(ctx))),
  );
  bus.handle(deleteTenantSessions, async ({ params, query }) => ({
    data: { ended: await endTenantSessions(deps, params.tenantId, query.userId) },
  }));
  bus.handle(deleteTenantSession, async ({ params }) => {
    await endTenantSession(deps, params.tenantId, params.id);
    return reply(204);
  });
  bus.handle(createPlaygroundToken, async ({ params, body }, ctx) =>
    issuePlaygroundToken(deps, ctx.principal, params.tenantId, body.projectId, body.agentId),
  );

  bus.serveInternal(resolveManageCredential, async (req) => ({
    principal: req.bearer
      ? await resolveBearer(deps, req.bearer)
      : req.session
        ? await resolveSession(deps, req.session)
        : null,
  }));
  bus.serveInternal(verifyPlaygroundTokenCall, ({ token }) => verifyPlaygroundToken(deps, token));
}
