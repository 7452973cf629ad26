import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import jwt from 'jsonwebtoken';

/**
 * A local fake of the chat product (the Slack Web API's shape) for tests: `POST /api/<method>` with form-encoded
 * or JSON bodies answers `{ok:true,…}` / `{ok:false,error}`, and `GET /oauth/v2/authorize` plays the user who
 * approves an installation. It records every call and can be told to fail. Tests run in jest workers, so they
 * program and inspect it over HTTP under `/_control/` (see `chatappFake()`).
 */

export interface FakeChannel {
  id: string;
  name: string;
  isPrivate?: boolean;
  isShared?: boolean;
  memberCount?: number;
}

export interface FakeTeam {
  teamId: string;
  teamName: string;
  domain: string;
  channels: FakeChannel[];
  /** Scopes granted when the authorize request does not say (default: what was asked). */
  scopes?: string[];
}

interface TeamState extends FakeTeam {
  tokens: Map<string, { revoked: boolean; scopes: string[] }>;
  calls: Array<{ method: string; params: Record<string, string>; at: string }>;
  messages: Array<{ channel: string; text: string; ts: string }>;
  failures: Array<{ method: string; error?: string; httpStatus?: number; remaining: number }>;
}

export interface ChatappFakeServer {
  url: string;
  apiUrl: string;
  authorizeUrl: string;
  clientId: string;
  clientSecret: string;
  close(): Promise<void>;
}

const randomUpper = (n: number) => randomBytes(n).toString('hex').toUpperCase().slice(0, n);

async function readBody(req: http.IncomingMessage): Promise<Record<string, string>> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  if (!raw) return {};
  const type = String(req.headers['content-type'] ?? '');
  if (type.includes('application/json')) {
    const parsed = JSON.parse(raw) as Record<string, unknown>;
    return Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]));
  }
  return Object.fromEntries(new URLSearchParams(raw));
}

export async function startChatappFake(opts: { clientId?: string; clientSecret?: string } = {}): Promise<ChatappFakeServer> {
  const clientId = opts.clientId ?? 'fake-client-id';
  const clientSecret = opts.clientSecret ?? `fake-secret-${randomUpper(12)}`;
  const teams = new Map<string, TeamState>();
  const codes = new Map<string, { teamId: string; redirectUri: string; scopes: string[] }>();
  let tsCounter = 0;

  const teamOfToken = (token: string | undefined) => {
    if (!token) return undefined;
    for (const t of teams.values()) if (t.tokens.has(token)) return t;
    return undefined;
  };

  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers }).end(JSON.stringify(body));
  };

  /** Answers a programmed failure for this call, if one is queued. */
  const failure = (team: TeamState | undefined, method: string, res: http.ServerResponse): boolean => {
    if (!team) return false;
    const f = team.failures.find((x) => x.method === method && x.remaining !== 0);
    if (!f) return false;
    if (f.remaining > 0) f.remaining--;
    if (f.httpStatus) res.writeHead(f.httpStatus, { 'content-type': 'text/plain' }).end('fake failure');
    else send(res, 200, { ok: false, error: f.error ?? 'fatal_error' });
    return true;
  };

  const api = async (method: string, req: http.IncomingMessage, res: http.ServerResponse) => {
    const params = await readBody(req);
    const auth = /^Bearer\s+(\S+)$/i.exec(String(req.headers.authorization ?? ''))?.[1];
    const token = auth ?? params.token;
    const { token: _t, client_secret: _s, ...recorded } = params;

    if (method === 'oauth.v2.access') {
      const grant = params.code ? codes.get(params.code) : undefined;
      const team = grant ? teams.get(grant.teamId) : undefined;
      team?.calls.push({ method, params: recorded, at: new Date().toISOString() });
      if (params.client_id !== clientId) return send(res, 200, { ok: false, error: 'invalid_client_id' });
      if (params.client_secret !== clientSecret) return send(res, 200, { ok: false, error: 'bad_client_secret' });
      if (failure(team, method, res)) return;
      if (!grant || !team) return send(res, 200, { ok: false, error: 'invalid_code' });
      codes.delete(params.code!);
      if (params.redirect_uri !== grant.redirectUri) return send(res, 200, { ok: false, error: 'bad_redirect_uri' });
      const botToken = `xoxb-${team.teamId}-${randomUpper(16)}`;
      const scopes = team.scopes ?? grant.scopes;
      team.tokens.set(botToken, { revoked: false, scopes });
      return send(res, 200, {
        ok: true,
        app_id: 'AFAKEAPP',
        authed_user: { id: 'UINSTALLER' },
        scope: scopes.join(','),
        token_type: 'bot',
        access_token: botToken,
        bot_user_id: 'UBOT',
        team: { id: team.teamId, name: team.teamName },
        enterprise: null,
        is_enterprise_install: false,
        ...(scopes.includes('incoming-webhook')
          ? { incoming_webhook: { channel: `#${team.channels[0]?.name ?? 'general'}`, channel_id: team.channels[0]?.id ?? 'C0', configuration_url: 'http://fake/config', url: `http://fake/hooks/${randomUpper(8)}` } }
          : {}),
      });
    }

    const team = teamOfToken(token);
    team?.calls.push({ method, params: recorded, at: new Date().toISOString() });
    if (!token) return send(res, 200, { ok: false, error: 'not_authed' });
    if (!team) return send(res, 200, { ok: false, error: 'invalid_auth' });
    const grant = team.tokens.get(token)!;
    if (grant.revoked) return send(res, 200, { ok: false, error: 'token_revoked' });
    if (failure(team, method, res)) return;
    const channel = (id: string | undefined) => team.channels.find((c) => c.id === id);
    const wire = (c: FakeChannel) => ({
      id: c.id,
      name: c.name,
      is_channel: !c.isPrivate,
      is_group: Boolean(c.isPrivate),
      is_private: Boolean(c.isPrivate),
      is_shared: Boolean(c.isShared),
      is_archived: false,
      num_members: c.memberCount ?? 0,
    });

    switch (method) {
      case 'auth.test':
        return send(
          res,
          200,
          { ok: true, url: `https://${team.domain}.chat.test/`, team: team.teamName, user: 'agents-bot', team_id: team.teamId, user_id: 'UBOT', bot_id: 'BFAKEBOT', is_enterprise_install: false },
          { 'x-oauth-scopes': grant.scopes.join(',') },
        );
      case 'auth.revoke':
        grant.revoked = true;
        return send(res, 200, { ok: true, revoked: true });
      case 'conversations.list': {
        const types = (params.types ?? 'public_channel').split(',');
        const all = team.channels.filter((c) => (c.isPrivate ? types.includes('private_channel') : types.includes('public_channel')));
        const limit = Math.max(1, Math.min(1000, Number(params.limit ?? 100)));
        const offset = params.cursor ? Number(Buffer.from(params.cursor, 'base64').toString().replace('offset:', '')) : 0;
        if (!Number.isInteger(offset) || offset < 0) return send(res, 200, { ok: false, error: 'invalid_cursor' });
        const page = all.slice(offset, offset + limit);
        const next = offset + limit < all.length ? Buffer.from(`offset:${offset + limit}`).toString('base64') : '';
        return send(res, 200, { ok: true, channels: page.map(wire), response_metadata: { next_cursor: next } });
      }
      case 'conversations.info': {
        const c = channel(params.channel);
        return c ? send(res, 200, { ok: true, channel: wire(c) }) : send(res, 200, { ok: false, error: 'channel_not_found' });
      }
      case 'chat.postMessage': {
        const target = params.channel;
        if (!target || (!channel(target) && !/^U[A-Z0-9]+$/.test(target))) return send(res, 200, { ok: false, error: 'channel_not_found' });
        if (!params.text && !params.blocks) return send(res, 200, { ok: false, error: 'no_text' });
        const ts = `${Math.floor(Date.now() / 1000)}.${String(++tsCounter).padStart(6, '0')}`;
        team.messages.push({ channel: target, text: params.text ?? '', ts });
        return send(res, 200, { ok: true, channel: target, ts, message: { text: params.text, ts } });
      }
      case 'users.info': {
        const id = params.user ?? '';
        if (!/^U[A-Z0-9]+$/.test(id)) return send(res, 200, { ok: false, error: 'user_not_found' });
        return send(res, 200, { ok: true, user: { id, team_id: team.teamId, name: id.toLowerCase(), real_name: id, profile: { display_name: id, email: `${id.toLowerCase()}@chat.test` } } });
      }
      default:
        return send(res, 200, { ok: false, error: 'unknown_method' });
    }
  };

  const authorize = (url: URL, res: http.ServerResponse) => {
    const redirectUri = url.searchParams.get('redirect_uri');
    const state = url.searchParams.get('state') ?? '';
    const team = teams.get(url.searchParams.get('team') ?? '');
    if (!redirectUri || url.searchParams.get('client_id') !== clientId || !team) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('bad authorize request (client_id, redirect_uri and a known team are needed)');
      return;
    }
    const back = new URL(redirectUri);
    if (url.searchParams.get('deny') === '1') {
      back.searchParams.set('error', 'access_denied');
    } else {
      const code = `code-${randomUpper(20)}`;
      codes.set(code, { teamId: team.teamId, redirectUri, scopes: (url.searchParams.get('scope') ?? '').split(',').filter(Boolean) });
      back.searchParams.set('code', code);
    }
    back.searchParams.set('state', state);
    res.writeHead(302, { location: back.toString() }).end();
  };

  const control = async (path: string[], method: string, req: http.IncomingMessage, res: http.ServerResponse) => {
    const body = method === 'POST' ? ((await readBody(req)) as unknown as Record<string, string>) : {};
    if (path[0] === 'teams' && path.length === 1 && method === 'POST') {
      const input = JSON.parse(JSON.stringify(body)) as Partial<Record<keyof FakeTeam, string>>;
      const teamId = input.teamId ?? `T${randomUpper(10)}`;
      const t: TeamState = {
        teamId,
        teamName: input.teamName ?? `Team ${teamId}`,
        domain: input.domain ?? teamId.toLowerCase(),
        channels: input.channels ? (JSON.parse(input.channels) as FakeChannel[]) : [{ id: `C${randomUpper(9)}`, name: 'general', memberCount: 3 }],
        scopes: input.scopes ? (JSON.parse(input.scopes) as string[]) : undefined,
        tokens: new Map(),
        calls: [],
        messages: [],
        failures: [],
      };
      teams.set(teamId, t);
      return send(res, 201, { teamId: t.teamId, teamName: t.teamName, domain: t.domain, channels: t.channels });
    }
    const team = teams.get(path[1] ?? '');
    if (path[0] !== 'teams' || !team) return send(res, 404, { error: 'unknown team' });
    const what = path[2];
    if (!what && method === 'GET') {
      return send(res, 200, { teamId: team.teamId, tokens: [...team.tokens.values()].map((g) => ({ revoked: g.revoked, scopes: g.scopes })) });
    }
    if (what === 'calls' && method === 'GET') return send(res, 200, { calls: team.calls });
    if (what === 'messages' && method === 'GET') return send(res, 200, { messages: team.messages });
    if (what === 'failures' && method === 'POST') {
      const times = body.times !== undefined ? Number(body.times) : 1;
      team.failures.push({ method: body.method!, error: body.error, httpStatus: body.httpStatus ? Number(body.httpStatus) : undefined, remaining: times < 0 ? -1 : times });
      return send(res, 201, { ok: true });
    }
    if (what === 'failures' && method === 'DELETE') {
      team.failures = [];
      return send(res, 200, { ok: true });
    }
    return send(res, 404, { error: 'unknown control route' });
  };

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const parts = url.pathname.split('/').filter(Boolean);
    const run = async () => {
      if (parts[0] === 'api' && parts.length === 2 && req.method === 'POST') return api(parts[1]!, req, res);
      if (url.pathname === '/oauth/v2/authorize' && req.method === 'GET') return authorize(url, res);
      if (parts[0] === '_control') return control(parts.slice(1), req.method ?? 'GET', req, res);
      res.writeHead(404).end();
    };
    run().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' }).end(String(err));
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: base,
    apiUrl: `${base}/api/`,
    authorizeUrl: `${base}/oauth/v2/authorize`,
    clientId,
    clientSecret,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** A test's handle on the fake (over HTTP, from any jest worker). */
export function chatappFake(url: string) {
  const json = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}/_control${path}`, {
      method,
      headers: body ? { 'content-type': 'application/json' } : {},
      body: body ? JSON.stringify(body) : undefined,
    });
    if (!res.ok) throw new Error(`chat fake ${method} ${path}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<any>;
  };
  return {
    url,
    /** A workspace that can approve installations (unique id unless given). */
    createTeam: (t: Partial<FakeTeam> = {}) => json('POST', '/teams', t) as Promise<{ teamId: string; teamName: string; domain: string; channels: FakeChannel[] }>,
    /** The next `times` calls of `method` for this team fail with `{ok:false, error}` (or the HTTP status); times -1 = always. */
    fail: (teamId: string, f: { method: string; error?: string; httpStatus?: number; times?: number }) => json('POST', `/teams/${teamId}/failures`, f),
    clearFailures: (teamId: string) => json('DELETE', `/teams/${teamId}/failures`),
    calls: async (teamId: string, method?: string) =>
      ((await json('GET', `/teams/${teamId}/calls`)).calls as Array<{ method: string; params: Record<string, string>; at: string }>).filter((c) => !method || c.method === method),
    messages: async (teamId: string) => (await json('GET', `/teams/${teamId}/messages`)).messages as Array<{ channel: string; text: string; ts: string }>,
    tokens: async (teamId: string) => (await json('GET', `/teams/${teamId}`)).tokens as Array<{ revoked: boolean; scopes: string[] }>,
  };
}
export type ChatappFake = ReturnType<typeof chatappFake>;

/**
 * Walks the browser's way through an installation: GET install → the chat product's authorize page (approving as
 * `teamId`, or denying) → our oauth_redirect → the result page URL.
 */
export async function installChatWorkspace(gatewayUrl: string, q: { tenantId: string; projectId?: string; teamId: string; includeWebhook?: boolean; deny?: boolean }) {
  const install = new URL(`${gatewayUrl}/work-apps/chatapp/install`);
  install.searchParams.set('tenant_id', q.tenantId);
  if (q.projectId) install.searchParams.set('project_id', q.projectId);
  if (q.includeWebhook) install.searchParams.set('include_webhook', 'true');
  const first = await fetch(install, { redirect: 'manual' });
  if (first.status !== 302) throw new Error(`install answered ${first.status}: ${await first.text()}`);
  const authorizeUrl = new URL(first.headers.get('location')!);
  authorizeUrl.searchParams.set('team', q.teamId);
  if (q.deny) authorizeUrl.searchParams.set('deny', '1');
  const approved = await fetch(authorizeUrl, { redirect: 'manual' });
  if (approved.status !== 302) throw new Error(`authorize answered ${approved.status}: ${await approved.text()}`);
  const callbackUrl = approved.headers.get('location')!;
  const callback = await fetch(callbackUrl, { redirect: 'manual' });
  if (callback.status !== 302) throw new Error(`oauth_redirect answered ${callback.status}: ${await callback.text()}`);
  return { authorizeUrl, callbackUrl: new URL(callbackUrl), result: new URL(callback.headers.get('location')!) };
}

/**
 * Signs a link token the way the chat app's bot side does (documented format: an HS256 JWT under the state
 * secret, issuer `platform-chatapp`, audience `chatapp:link`, claims `tid`, `team`, `sub` = chat user id, optional
 * `name`, `email`, and a `jti`). `expiresInSeconds` may be negative to make an already expired token.
 */
export function signChatLinkToken(secret: string, c: { tenantId: string; teamId: string; chatappUserId: string; name?: string; email?: string }, expiresInSeconds = 600): string {
  const now = Math.floor(Date.now() / 1000);
  return jwt.sign(
    { tid: c.tenantId, team: c.teamId, sub: c.chatappUserId, name: c.name, email: c.email, iat: now - 3600, exp: now + expiresInSeconds, jti: randomUpper(24) },
    secret,
    { algorithm: 'HS256', audience: 'chatapp:link', issuer: 'platform-chatapp' },
  );
}

/** Signs an OAuth `state` the way `install` does (for tests of expired states); `expiresInSeconds` may be negative. */
export function signChatappState(secret: string, c: { tenantId: string; projectId?: string }, expiresInSeconds = 600): string {
  const now = Math.floor(Date.now() / 1000);
  return jwt.sign(
    { tid: c.tenantId, pid: c.projectId ?? null, wh: false, iat: now - 3600, exp: now + expiresInSeconds, jti: randomUpper(24) },
    secret,
    { algorithm: 'HS256', audience: 'chatapp:install-state', issuer: 'platform-chatapp' },
  );
}
