import {
  LogLevel,
  WebClient,
  WebAPIHTTPError,
  WebAPIPlatformError,
  WebAPIRateLimitedError,
  WebAPIRequestError,
} from '@slack/web-api';

/**
 * The chat product's Web API (the Slack Web API's shape), through the official `WebClient` pointed at a
 * configured base URL. Every method returns plain data or throws a `ChatApiError` naming the chat product's error.
 */

/** A failed call: `platform` = the chat product answered `{ok:false, error}`; `transport` = no usable answer. */
export class ChatApiError extends Error {
  constructor(
    readonly method: string,
    readonly chatError: string,
    readonly kind: 'platform' | 'transport',
  ) {
    super(`${method} failed: ${chatError}`);
    this.name = 'ChatApiError';
  }
}

export interface OAuthInstall {
  teamId: string;
  teamName: string;
  appId: string | null;
  botUserId: string | null;
  botToken: string;
  scopes: string[];
  installerUserId: string | null;
  incomingWebhook: { channelId: string | null; channel: string | null; url: string } | null;
}

export interface RawChannel {
  id: string;
  name: string;
  isPrivate: boolean;
  isShared: boolean;
  memberCount: number;
}

export interface AuthInfo {
  teamId: string | null;
  team: string | null;
  url: string | null;
  botId: string | null;
  user: string | null;
  scopes: string[] | null;
}

export interface ChatApi {
  readonly configured: boolean;
  oauthAccess(code: string, redirectUri: string): Promise<OAuthInstall>;
  authTest(token: string): Promise<AuthInfo>;
  revoke(token: string): Promise<void>;
  listChannels(
    token: string,
    q: { limit: number; cursor?: string; types: string },
  ): Promise<{ channels: RawChannel[]; nextCursor: string | null }>;
  channelInfo(token: string, channelId: string): Promise<RawChannel>;
  postMessage(token: string, m: { channel: string; text: string }): Promise<{ ts: string; channel: string }>;
}

export interface ChatApiOptions {
  apiUrl?: string;
  clientId?: string;
  clientSecret?: string;
  timeoutMs: number;
}

function toChatApiError(method: string, err: unknown): ChatApiError {
  if (err instanceof WebAPIPlatformError)
    return new ChatApiError(method, String(err.data.error ?? 'unknown_error'), 'platform');
  if (err instanceof WebAPIRateLimitedError) return new ChatApiError(method, 'ratelimited', 'transport');
  if (err instanceof WebAPIHTTPError) return new ChatApiError(method, `http_${err.statusCode}`, 'transport');
  if (err instanceof WebAPIRequestError) return new ChatApiError(method, 'request_failed', 'transport');
  return new ChatApiError(method, 'request_failed', 'transport');
}

const str = (v: unknown): string | null => (typeof v === 'string' && v ? v : null);

function toChannel(c: Record<string, unknown>): RawChannel {
  return {
    id: String(c.id),
    name: String(c.name ?? c.id),
    isPrivate: Boolean(c.is_private),
    isShared: Boolean(c.is_shared || c.is_ext_shared || c.is_org_shared),
    memberCount: typeof c.num_members === 'number' ? c.num_members : 0,
  };
}

export function chatApi(opts: ChatApiOptions): ChatApi {
  const base = opts.apiUrl ? (opts.apiUrl.endsWith('/') ? opts.apiUrl : `${opts.apiUrl}/`) : undefined;
  // No retries here: a caller is waiting, and the dispatcher has its own retry policy.
  const web = base
    ? new WebClient(undefined, {
        slackApiUrl: base,
        timeout: opts.timeoutMs,
        retryConfig: { retries: 0 },
        rejectRateLimitedCalls: true,
        allowAbsoluteUrls: false,
        logLevel: LogLevel.ERROR,
      })
    : undefined;

  async function call(method: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
    if (!web) throw new ChatApiError(method, 'not_configured', 'transport');
    try {
      return (await web.apiCall(method, args)) as unknown as Record<string, unknown>;
    } catch (err) {
      throw toChatApiError(method, err);
    }
  }

  return {
    configured: Boolean(web && opts.clientId && opts.clientSecret),
    async oauthAccess(code, redirectUri) {
      const r = await call('oauth.v2.access', {
        client_id: opts.clientId,
        client_secret: opts.clientSecret,
        code,
        redirect_uri: redirectUri,
      });
      const team = (r.team ?? {}) as Record<string, unknown>;
      const hook = r.incoming_webhook as Record<string, unknown> | undefined;
      const token = str(r.access_token);
      if (!token || !str(team.id)) throw new ChatApiError('oauth.v2.access', 'invalid_response', 'transport');
      return {
        teamId: String(team.id),
        teamName: str(team.name) ?? String(team.id),
        appId: str(r.app_id),
        botUserId: str(r.bot_user_id),
        botToken: token,
        scopes: String(r.scope ?? '')
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
        installerUserId: str((r.authed_user as Record<string, unknown> | undefined)?.id),
        incomingWebhook:
          hook && str(hook.url)
            ? { channelId: str(hook.channel_id), channel: str(hook.channel), url: String(hook.url) }
            : null,
      };
    },
    async authTest(token) {
      const r = await call('auth.test', { token });
      const meta = r.response_metadata as { scopes?: string[] } | undefined;
      return {
        teamId: str(r.team_id),
        team: str(r.team),
        url: str(r.url),
        botId: str(r.bot_id),
        user: str(r.user),
        scopes: Array.isArray(meta?.scopes) ? meta.scopes : null,
      };
    },
    async revoke(token) {
      await call('auth.revoke', { token });
    },
    async listChannels(token, q) {
      const r = await call('conversations.list', {
        token,
        limit: q.limit,
        cursor: q.cursor,
        types: q.types,
        exclude_archived: true,
      });
      const channels = Array.isArray(r.channels) ? (r.channels as Array<Record<string, unknown>>).map(toChannel) : [];
      const next = str((r.response_metadata as Record<string, unknown> | undefined)?.next_cursor);
      return { channels, nextCursor: next };
    },
    async channelInfo(token, channelId) {
      const r = await call('conversations.info', { token, channel: channelId });
      return toChannel((r.channel ?? {}) as Record<string, unknown>);
    },
    async postMessage(token, m) {
      const r = await call('chat.postMessage', { token, channel: m.channel, text: m.text });
      return { ts: String(r.ts ?? ''), channel: String(r.channel ?? m.channel) };
    },
  };
}
