import http from 'node:http';
import type { AddressInfo } from 'node:net';
import jwt from 'jsonwebtoken';
import { authorize } from './chatapp/authorize';
import { control } from './chatapp/control';
import { devPage, type DevPagesOptions } from './chatapp/dev-pages';
import { randomUpper } from './chatapp/http';
import { FakeState, type FakeChannel, type FakeTeam } from './chatapp/state';
import { webApi } from './chatapp/web-api';

/**
 * A local fake of the chat product (the Slack Web API's shape) for tests: `POST /api/<method>` with form-encoded
 * or JSON bodies answers `{ok:true,…}` / `{ok:false,error}` (chatapp/web-api.ts), and `GET /oauth/v2/authorize` plays
 * the user who approves an installation (chatapp/authorize.ts). It records every call and can be told to fail. Tests
 * run in jest workers, so they program and inspect it over HTTP under `/_control/` (chatapp/control.ts, `chatappFake()`).
 */

export type { DevPagesOptions } from './chatapp/dev-pages';
export type { FakeChannel, FakeTeam } from './chatapp/state';

export interface ChatappFakeServer {
  url: string;
  apiUrl: string;
  authorizeUrl: string;
  clientId: string;
  clientSecret: string;
  close(): Promise<void>;
}

export interface ChatappFakeOptions {
  clientId?: string;
  clientSecret?: string;
  /** Port to listen on (default 0: a free one). */
  port?: number;
  /**
   * Pages for a person trying the integration locally (npm start; never in production): the authorize page asks
   * which workspace to approve, `/` shows workspaces, channels and posted messages, `/app_redirect` lets the person
   * play the chat user who completes a link, and `/local/result` and `/local/link` stand in for the management UI
   * (chatapp/dev-pages.ts).
   */
  devPages?: DevPagesOptions;
  /** Keeps workspaces, bot tokens and messages in this JSON file across restarts (the local stack's database does). */
  stateFile?: string;
}

/** The workspace the development pages start with when the state file has none. */
const LOCAL_WORKSPACE: FakeTeam = {
  teamId: 'TLOCAL0001',
  teamName: 'Local Workspace',
  domain: 'local-workspace',
  channels: [
    { id: 'CGENERAL01', name: 'general', memberCount: 5 },
    { id: 'CSUPPORT01', name: 'support', memberCount: 3 },
    { id: 'CPRIVATE01', name: 'leads', isPrivate: true, memberCount: 2 },
  ],
};

export async function startChatappFake(opts: ChatappFakeOptions = {}): Promise<ChatappFakeServer> {
  const state = new FakeState(
    opts.clientId ?? 'fake-client-id',
    opts.clientSecret ?? `fake-secret-${randomUpper(12)}`,
    opts.stateFile,
  );
  if (opts.devPages && state.teams.size === 0) state.addTeam(LOCAL_WORKSPACE);
  const server = http.createServer((req, res) => {
    route(state, opts.devPages, req, res).catch((err: unknown) => {
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
    clientId: state.clientId,
    clientSecret: state.clientSecret,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

async function route(
  state: FakeState,
  devPages: DevPagesOptions | undefined,
  req: http.IncomingMessage,
  res: http.ServerResponse,
) {
  const url = new URL(req.url ?? '/', 'http://fake');
  const parts = url.pathname.split('/').filter(Boolean);
  if (parts[0] === 'api' && parts.length === 2 && req.method === 'POST') return webApi(state, parts[1]!, req, res);
  if (url.pathname === '/oauth/v2/authorize' && req.method === 'GET')
    return authorize(state, url, res, Boolean(devPages));
  if (parts[0] === '_control') return control(state, parts.slice(1), req.method ?? 'GET', req, res);
  const dev = devPages && devPage(state, devPages, url, req.method ?? 'GET');
  if (dev) return dev(req, res);
  res.writeHead(404).end();
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
    createTeam: (t: Partial<FakeTeam> = {}) =>
      json('POST', '/teams', t) as Promise<{
        teamId: string;
        teamName: string;
        domain: string;
        channels: FakeChannel[];
      }>,
    /** The next `times` calls of `method` for this team fail with `{ok:false, error}` (or the HTTP status); times -1 = always. */
    fail: (teamId: string, f: { method: string; error?: string; httpStatus?: number; times?: number }) =>
      json('POST', `/teams/${teamId}/failures`, f),
    clearFailures: (teamId: string) => json('DELETE', `/teams/${teamId}/failures`),
    calls: async (teamId: string, method?: string) =>
      (
        (await json('GET', `/teams/${teamId}/calls`)).calls as Array<{
          method: string;
          params: Record<string, string>;
          at: string;
        }>
      ).filter((c) => !method || c.method === method),
    messages: async (teamId: string) =>
      (await json('GET', `/teams/${teamId}/messages`)).messages as Array<{ channel: string; text: string; ts: string }>,
    tokens: async (teamId: string) =>
      (await json('GET', `/teams/${teamId}`)).tokens as Array<{ revoked: boolean; scopes: string[] }>,
  };
}
export type ChatappFake = ReturnType<typeof chatappFake>;

/** An install link (`POST /work-apps/chatapp/install-links` with a management bearer token): the URL to open. */
export async function anInstallLink(
  gatewayUrl: string,
  token: string,
  body: { tenantId?: string; projectId?: string; includeWebhook?: boolean } = {},
): Promise<URL> {
  const res = await fetch(`${gatewayUrl}/work-apps/chatapp/install-links`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 201) throw new Error(`minting an install link answered ${res.status}: ${await res.text()}`);
  return new URL(((await res.json()) as { data: { url: string } }).data.url);
}

/**
 * Walks the browser's way through an installation (with an install link minted by `token`): GET install → the chat product's authorize page (approving as
 * `teamId`, or denying) → our oauth_redirect → the result page URL.
 */
export async function installChatWorkspace(
  gatewayUrl: string,
  q: { token: string; tenantId: string; projectId?: string; teamId: string; includeWebhook?: boolean; deny?: boolean },
) {
  const install = await anInstallLink(gatewayUrl, q.token, {
    tenantId: q.tenantId,
    projectId: q.projectId,
    includeWebhook: q.includeWebhook,
  });
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
export function signChatLinkToken(
  secret: string,
  c: { tenantId: string; teamId: string; chatappUserId: string; name?: string; email?: string },
  expiresInSeconds = 600,
): string {
  const now = Math.floor(Date.now() / 1000);
  return jwt.sign(
    {
      tid: c.tenantId,
      team: c.teamId,
      sub: c.chatappUserId,
      name: c.name,
      email: c.email,
      iat: now - 3600,
      exp: now + expiresInSeconds,
      jti: randomUpper(24),
    },
    secret,
    { algorithm: 'HS256', audience: 'chatapp:link', issuer: 'platform-chatapp' },
  );
}

/** Signs an OAuth `state` the way `install` does (for tests of expired states); `expiresInSeconds` may be negative. */
export function signChatappState(
  secret: string,
  c: { tenantId: string; projectId?: string },
  expiresInSeconds = 600,
): string {
  const now = Math.floor(Date.now() / 1000);
  return jwt.sign(
    {
      tid: c.tenantId,
      pid: c.projectId ?? null,
      wh: false,
      iat: now - 3600,
      exp: now + expiresInSeconds,
      jti: randomUpper(24),
    },
    secret,
    { algorithm: 'HS256', audience: 'chatapp:install-state', issuer: 'platform-chatapp' },
  );
}
