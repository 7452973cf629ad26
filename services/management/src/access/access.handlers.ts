import {
  createAccessToken,
  createPlaygroundToken,
  createSession,
  deleteAccessToken,
  deleteSession,
  listAccessTokens,
  pagination,
  resolveManageCredential,
  verifyPlaygroundToken as verifyPlaygroundTokenCall,
} from '@platform/contracts';
import { reply, type ServiceBus } from '@platform/bus';
import {
  closeSession,
  issueAccessToken,
  issuePlaygroundToken,
  listAccessTokensPage,
  openSession,
  resolveBearer,
  resolveSession,
  revokeAccessToken,
  verifyPlaygroundToken,
  type AccessDeps,
} from './access';

function cookieFrom(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return decodeURIComponent(part.slice(i + 1).trim());
  }
  return undefined;
}

export function registerAccessHandlers(bus: ServiceBus, deps: AccessDeps, cookieName: string) {
  bus.handle(createAccessToken, async ({ params, body }) => ({ data: await issueAccessToken(deps, params.tenantId, body) }));
  bus.handle(listAccessTokens, async ({ params, query }) => {
    const { rows, total } = await listAccessTokensPage(deps, params.tenantId, query.page, query.limit);
    return { data: rows, pagination: pagination(query.page, query.limit, total, rows.length) };
  });
  bus.handle(deleteAccessToken, async ({ params }) => {
    await revokeAccessToken(deps, params.tenantId, params.id);
    return reply(204);
  });
  bus.handle(createSession, async (_input, ctx) => {
    const { session, expiresAt } = await openSession(deps, ctx.principal);
    const p = ctx.principal as { kind: string; tenantId?: string; role?: string };
    const maxAge = Math.floor((Date.parse(expiresAt) - Date.now()) / 1000);
    const secure = ctx.meta.baseUrl?.startsWith('https://') ? '; Secure; SameSite=None' : '; SameSite=Lax';
    return reply(201, { data: { expiresAt, principal: { kind: p.kind, tenantId: p.tenantId, role: p.role } } }, {
      'set-cookie': `${cookieName}=${session}; Path=/; HttpOnly; Max-Age=${maxAge}${secure}`,
    });
  });
  bus.handle(deleteSession, async (_input, ctx) => {
    const session = cookieFrom(ctx.meta.headers?.cookie, cookieName);
    if (session) await closeSession(deps, session);
    return reply(204, undefined, { 'set-cookie': `${cookieName}=; Path=/; HttpOnly; Max-Age=0` });
  });
  bus.handle(createPlaygroundToken, async ({ params, body }, ctx) => issuePlaygroundToken(deps, ctx.principal, params.tenantId, body.projectId, body.agentId));

  bus.serveInternal(resolveManageCredential, async (req) => ({
    principal: req.bearer ? await resolveBearer(deps, req.bearer) : req.session ? await resolveSession(deps, req.session) : null,
  }));
  bus.serveInternal(verifyPlaygroundTokenCall, ({ token }) => verifyPlaygroundToken(deps, token));
}
