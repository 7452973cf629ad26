// `POST /api/<method>`: the Web API methods the platform calls, one function per method family. Every call is
// recorded on its team (token and client secret left out) and may be answered by a programmed failure first.
import type http from 'node:http';
import { randomUpper, readBody, send } from './http';
import { failure, type FakeChannel, type FakeState, type Grant, type TeamState } from './state';

type Params = Record<string, string>;
/** An authenticated call: its team, the token's grant, its parameters. */
interface Call {
  state: FakeState;
  team: TeamState;
  grant: Grant;
  method: string;
  params: Params;
  res: http.ServerResponse;
}

export async function webApi(state: FakeState, method: string, req: http.IncomingMessage, res: http.ServerResponse) {
  const params = await readBody(req);
  const auth = /^Bearer\s+(\S+)$/i.exec(String(req.headers.authorization ?? ''))?.[1];
  const token = auth ?? params.token;
  const { token: _t, client_secret: _s, ...recorded } = params;
  if (method === 'oauth.v2.access') return oauthAccess(state, params, recorded, res);

  const team = state.teamOfToken(token);
  team?.calls.push({ method, params: recorded, at: new Date().toISOString() });
  if (!token) return send(res, 200, { ok: false, error: 'not_authed' });
  if (!team) return send(res, 200, { ok: false, error: 'invalid_auth' });
  const grant = team.tokens.get(token)!;
  if (grant.revoked) return send(res, 200, { ok: false, error: 'token_revoked' });
  if (failure(team, method, res)) return;
  const call: Call = { state, team, grant, method, params, res };
  const family = method.slice(0, method.indexOf('.'));
  const handled =
    family === 'auth'
      ? authMethods(call)
      : family === 'conversations'
        ? conversationMethods(call)
        : family === 'chat'
          ? chatMethods(call)
          : family === 'users'
            ? userMethods(call)
            : false;
  if (!handled) send(res, 200, { ok: false, error: 'unknown_method' });
}

/** Exchanges an authorization code for a bot token (the end of an installation). */
function oauthAccess(state: FakeState, params: Params, recorded: Params, res: http.ServerResponse) {
  const method = 'oauth.v2.access';
  const grant = params.code ? state.codes.get(params.code) : undefined;
  const team = grant ? state.teams.get(grant.teamId) : undefined;
  team?.calls.push({ method, params: recorded, at: new Date().toISOString() });
  if (params.client_id !== state.clientId) return send(res, 200, { ok: false, error: 'invalid_client_id' });
  if (params.client_secret !== state.clientSecret) return send(res, 200, { ok: false, error: 'bad_client_secret' });
  if (failure(team, method, res)) return;
  if (!grant || !team) return send(res, 200, { ok: false, error: 'invalid_code' });
  state.codes.delete(params.code!);
  if (params.redirect_uri !== grant.redirectUri) return send(res, 200, { ok: false, error: 'bad_redirect_uri' });
  const botToken = `xoxb-${team.teamId}-${randomUpper(16)}`;
  const scopes = team.scopes ?? grant.scopes;
  team.tokens.set(botToken, { revoked: false, scopes });
  state.save();
  const first = team.channels[0];
  const webhook = {
    channel: `#${first?.name ?? 'general'}`,
    channel_id: first?.id ?? 'C0',
    configuration_url: 'http://fake/config',
    url: `http://fake/hooks/${randomUpper(8)}`,
  };
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
    ...(scopes.includes('incoming-webhook') ? { incoming_webhook: webhook } : {}),
  });
}

function authMethods({ state, team, grant, method, res }: Call): boolean {
  if (method === 'auth.test') {
    const body = {
      ok: true,
      url: `https://${team.domain}.chat.test/`,
      team: team.teamName,
      user: 'agents-bot',
      team_id: team.teamId,
      user_id: 'UBOT',
      bot_id: 'BFAKEBOT',
      is_enterprise_install: false,
    };
    send(res, 200, body, { 'x-oauth-scopes': grant.scopes.join(',') });
    return true;
  }
  if (method === 'auth.revoke') {
    grant.revoked = true;
    state.save();
    send(res, 200, { ok: true, revoked: true });
    return true;
  }
  return false;
}

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

function conversationMethods({ team, method, params, res }: Call): boolean {
  if (method === 'conversations.list') {
    const types = (params.types ?? 'public_channel').split(',');
    const all = team.channels.filter((c) =>
      c.isPrivate ? types.includes('private_channel') : types.includes('public_channel'),
    );
    const limit = Math.max(1, Math.min(1000, Number(params.limit ?? 100)));
    const offset = params.cursor ? Number(Buffer.from(params.cursor, 'base64').toString().replace('offset:', '')) : 0;
    if (!Number.isInteger(offset) || offset < 0) {
      send(res, 200, { ok: false, error: 'invalid_cursor' });
      return true;
    }
    const page = all.slice(offset, offset + limit);
    const next = offset + limit < all.length ? Buffer.from(`offset:${offset + limit}`).toString('base64') : '';
    send(res, 200, { ok: true, channels: page.map(wire), response_metadata: { next_cursor: next } });
    return true;
  }
  if (method === 'conversations.info') {
    const c = team.channels.find((x) => x.id === params.channel);
    send(res, 200, c ? { ok: true, channel: wire(c) } : { ok: false, error: 'channel_not_found' });
    return true;
  }
  return false;
}

function chatMethods({ state, team, method, params, res }: Call): boolean {
  if (method !== 'chat.postMessage') return false;
  const target = params.channel;
  if (!target || (!team.channels.some((c) => c.id === target) && !/^U[A-Z0-9]+$/.test(target)))
    send(res, 200, { ok: false, error: 'channel_not_found' });
  else if (!params.text && !params.blocks) send(res, 200, { ok: false, error: 'no_text' });
  else {
    const ts = state.nextTs();
    team.messages.push({ channel: target, text: params.text ?? '', ts });
    state.save();
    send(res, 200, { ok: true, channel: target, ts, message: { text: params.text, ts } });
  }
  return true;
}

function userMethods({ team, method, params, res }: Call): boolean {
  if (method !== 'users.info') return false;
  const id = params.user ?? '';
  if (!/^U[A-Z0-9]+$/.test(id)) send(res, 200, { ok: false, error: 'user_not_found' });
  else
    send(res, 200, {
      ok: true,
      user: {
        id,
        team_id: team.teamId,
        name: id.toLowerCase(),
        real_name: id,
        profile: { display_name: id, email: `${id.toLowerCase()}@chat.test` },
      },
    });
  return true;
}
