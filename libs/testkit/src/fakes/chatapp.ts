import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
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

export interface ChatappFakeOptions {
  clientId?: string;
  clientSecret?: string;
  /** Port to listen on (default 0: a free one). */
  port?: number;
  /**
   * Pages for a person trying the integration locally (npm start; never in production): the authorize page asks
   * which workspace to approve, `/` shows workspaces, channels and posted messages, `/app_redirect` lets the person
   * play the chat user who completes a link, and `/local/result` and `/local/link` stand in for the management UI.
   */
  devPages?: DevPagesOptions;
  /** Keeps workspaces, bot tokens and messages in this JSON file across restarts (the local stack's database does). */
  stateFile?: string;
}

export interface DevPagesOptions {
  /** Base URL of the gateway, for the commands the pages suggest. */
  gatewayUrl: string;
  /** Plays our bot side: completes a link session for a chat user (the local stack calls the chatapp service). */
  completeLinkSession?(input: { sessionToken: string; chatappTeamId: string; chatappUserId: string; chatappUsername?: string }): Promise<unknown>;
}

const html = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const page = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${html(title)}</title><style>body{font:15px/1.5 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem}code,pre{background:#f3f3f3;padding:.1rem .3rem}pre{padding:.6rem;white-space:pre-wrap;word-break:break-all}a.button,button{display:inline-block;margin:.2rem .4rem .2rem 0;padding:.4rem .8rem;border:1px solid #444;border-radius:4px;background:#fff;color:#000;text-decoration:none;cursor:pointer}</style></head><body><p><small>Local fake of the chat product (development only)</small></p><h1>${html(title)}</h1>${body}</body></html>`;

export async function startChatappFake(opts: ChatappFakeOptions = {}): Promise<ChatappFakeServer> {
  const clientId = opts.clientId ?? 'fake-client-id';
  const clientSecret = opts.clientSecret ?? `fake-secret-${randomUpper(12)}`;
  const teams = new Map<string, TeamState>();
  const codes = new Map<string, { teamId: string; redirectUri: string; scopes: string[] }>();
  let tsCounter = 0;

  // Persistence (stateFile): teams with their tokens and messages, written after every change.
  if (opts.stateFile && existsSync(opts.stateFile)) {
    const saved = JSON.parse(readFileSync(opts.stateFile, 'utf8')) as Array<FakeTeam & { tokens: Array<[string, { revoked: boolean; scopes: string[] }]>; messages: TeamState['messages'] }>;
    for (const t of saved) teams.set(t.teamId, { ...t, tokens: new Map(t.tokens), calls: [], failures: [] });
  }
  const save = () => {
    if (!opts.stateFile) return;
    const out = [...teams.values()].map(({ calls: _c, failures: _f, tokens, messages, ...t }) => ({ ...t, tokens: [...tokens], messages: messages.slice(-200) }));
    writeFileSync(opts.stateFile, JSON.stringify(out, null, 2));
  };
  const addTeam = (input: Partial<FakeTeam>): TeamState => {
    const teamId = input.teamId ?? `T${randomUpper(10)}`;
    const t: TeamState = {
      teamId,
      teamName: input.teamName ?? `Team ${teamId}`,
      domain: input.domain ?? teamId.toLowerCase(),
      channels: input.channels ?? [{ id: `C${randomUpper(9)}`, name: 'general', memberCount: 3 }],
      scopes: input.scopes,
      tokens: new Map(),
      calls: [],
      messages: [],
      failures: [],
    };
    teams.set(teamId, t);
    save();
    return t;
  };
  if (opts.devPages && teams.size === 0) {
    addTeam({
      teamId: 'TLOCAL0001',
      teamName: 'Local Workspace',
      domain: 'local-workspace',
      channels: [
        { id: 'CGENERAL01', name: 'general', memberCount: 5 },
        { id: 'CSUPPORT01', name: 'support', memberCount: 3 },
        { id: 'CPRIVATE01', name: 'leads', isPrivate: true, memberCount: 2 },
      ],
    });
  }

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
      save();
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
        save();
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
        save();
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
    if (opts.devPages && !url.searchParams.get('team') && redirectUri && url.searchParams.get('client_id') === clientId) {
      const choice = (params: Record<string, string>) => {
        const u = new URL(url);
        for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
        return `${u.pathname}${u.search}`;
      };
      const first = teams.keys().next().value ?? '';
      const body =
        `<p>The agent platform asks to be installed with the scopes <code>${html(url.searchParams.get('scope') ?? '')}</code>.</p>` +
        [...teams.values()].map((t) => `<a class="button" href="${html(choice({ team: t.teamId }))}">Allow in ${html(t.teamName)}</a>`).join('') +
        `<a class="button" href="${html(choice({ team: first, deny: '1' }))}">Cancel</a>`;
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page('Install the agent platform', body));
      return;
    }
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
      const t = addTeam({
        teamId: input.teamId,
        teamName: input.teamName,
        domain: input.domain,
        channels: input.channels ? (JSON.parse(input.channels) as FakeChannel[]) : undefined,
        scopes: input.scopes ? (JSON.parse(input.scopes) as string[]) : undefined,
      });
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

  const sendPage = (res: http.ServerResponse, status: number, title: string, body: string): void => {
    res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' }).end(page(title, body));
  };

  /** The development pages (devPages), or undefined for any other path. */
  const devPage = (url: URL, method: string): ((req: http.IncomingMessage, res: http.ServerResponse) => Promise<void> | void) | undefined => {
    const dev = opts.devPages!;
    const curl = (m: string, path: string, json?: unknown) =>
      `curl -X ${m} -H "Authorization: Bearer $ADMIN_TOKEN"${json ? ` -H 'content-type: application/json' -d '${JSON.stringify(json)}'` : ''} ${dev.gatewayUrl}${path}`;
    if (url.pathname === '/' && method === 'GET') {
      return (_req, res) => {
        const body = [...teams.values()]
          .map((t) => {
            const channels = t.channels.map((c) => `<li><code>${html(c.id)}</code> #${html(c.name)}${c.isPrivate ? ' (private)' : ''}</li>`).join('');
            const messages = t.messages.slice(-20).reverse().map((m) => `<li><code>${html(m.channel)}</code> ${html(m.text)}</li>`).join('') || '<li>none yet</li>';
            const installed = [...t.tokens.values()].some((g) => !g.revoked);
            return `<h2>${html(t.teamName)} <code>${html(t.teamId)}</code>${installed ? ' (app installed)' : ''}</h2><p>Channels:</p><ul>${channels}</ul><p>Latest messages posted by the app:</p><ul>${messages}</ul>`;
          })
          .join('');
        const mint = curl('POST', '/work-apps/chatapp/install-links', { tenantId: 'acme', projectId: 'demo' });
        sendPage(res, 200, 'Chat workspaces', `<p>Install the app: mint an install link with <code>${html(mint)}</code> and open its <code>data.url</code></p>${body}`);
      };
    }
    if (url.pathname === '/local/result' && method === 'GET') {
      return (_req, res) => {
        const rows = [...url.searchParams].map(([k, v]) => `<li><code>${html(k)}</code> = ${html(v)}</li>`).join('');
        const teamId = url.searchParams.get('teamId');
        const next = teamId
          ? `<p>Next, route a channel to an agent:</p><pre>${html(curl('PUT', `/work-apps/chatapp/workspaces/${teamId}/channels/CSUPPORT01/settings`, { agentConfig: { agentId: 'support-bot', projectId: url.searchParams.get('project_id') ?? 'demo' } }))}</pre><p>See the workspaces and messages at <a href="/">the chat product's overview</a>.</p>`
          : '';
        sendPage(res, 200, url.searchParams.get('success') === 'true' ? 'Installed' : 'Not installed', `<p>Stand-in for the management UI's result page. The platform sent:</p><ul>${rows}</ul>${next}`);
      };
    }
    if (url.pathname === '/local/link' && method === 'GET') {
      return (_req, res) => {
        const token = url.searchParams.get('token') ?? '';
        sendPage(res, 200, 'Link your chat account', `<p>Stand-in for the management UI's link page. A signed-in platform user completes the link with:</p><pre>${html(curl('POST', '/work-apps/chatapp/users/link/verify-token', { token, userId: 'local-user' }))}</pre>`);
      };
    }
    if (url.pathname === '/app_redirect' && method === 'GET') {
      return (_req, res) => {
        const session = url.searchParams.get('session') ?? '';
        const options = [...teams.values()].map((t) => `<option value="${html(t.teamId)}">${html(t.teamName)}</option>`).join('');
        sendPage(
          res,
          200,
          'Talk to the agent platform bot',
          `<p>Here the chat user would open the bot's conversation, and the bot would finish the link. Play that user:</p><form method="post" action="/app_redirect"><input type="hidden" name="session" value="${html(session)}"><p><label>Workspace <select name="team">${options}</select></label></p><p><label>Chat user id <input name="user" value="ULOCAL0001" pattern="U[A-Z0-9]+"></label></p><p><label>Chat user name <input name="username" value="local.user"></label></p><button type="submit">Link my chat account</button></form>`,
        );
      };
    }
    if (url.pathname === '/app_redirect' && method === 'POST') {
      return async (req, res) => {
        const form = await readBody(req);
        if (!dev.completeLinkSession) {
          sendPage(res, 501, 'Not available', '<p>Nobody plays the bot side here.</p>');
          return;
        }
        const result = await dev.completeLinkSession({ sessionToken: form.session ?? '', chatappTeamId: form.team ?? '', chatappUserId: form.user ?? '', chatappUsername: form.username || undefined });
        sendPage(res, 200, 'Link answered', `<p>The chatapp service answered:</p><pre>${html(JSON.stringify(result, null, 2))}</pre>`);
      };
    }
    return undefined;
  };

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const parts = url.pathname.split('/').filter(Boolean);
    const run = async () => {
      if (parts[0] === 'api' && parts.length === 2 && req.method === 'POST') return api(parts[1]!, req, res);
      if (url.pathname === '/oauth/v2/authorize' && req.method === 'GET') return authorize(url, res);
      if (parts[0] === '_control') return control(parts.slice(1), req.method ?? 'GET', req, res);
      if (opts.devPages) {
        const dev = devPage(url, req.method ?? 'GET');
        if (dev) return dev(req, res);
      }
      res.writeHead(404).end();
    };
    run().catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' }).end(String(err));
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
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

/** An install link (`POST /work-apps/chatapp/install-links` with a management bearer token): the URL to open. */
export async function anInstallLink(gatewayUrl: string, token: string, body: { tenantId?: string; projectId?: string; includeWebhook?: boolean } = {}): Promise<URL> {
  const res = await fetch(`${gatewayUrl}/work-apps/chatapp/install-links`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (res.status !== 201) throw new Error(`minting an install link answered ${res.status}: ${await res.text()}`);
  return new URL(((await res.json()) as { data: { url: string } }).data.url);
}

/**
 * Walks the browser's way through an installation (with an install link minted by `token`): GET install → the chat product's authorize page (approving as
 * `teamId`, or denying) → our oauth_redirect → the result page URL.
 */
export async function installChatWorkspace(gatewayUrl: string, q: { token: string; tenantId: string; projectId?: string; teamId: string; includeWebhook?: boolean; deny?: boolean }) {
  const install = await anInstallLink(gatewayUrl, q.token, { tenantId: q.tenantId, projectId: q.projectId, includeWebhook: q.includeWebhook });
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
