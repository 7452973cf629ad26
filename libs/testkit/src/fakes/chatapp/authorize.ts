// `GET /oauth/v2/authorize`: the fake plays the user who approves (or denies) an installation in a workspace and sends
// the browser back to the platform with a code. With the development pages on and no workspace named, it asks which.
import type http from 'node:http';
import { html, page, randomUpper } from './http';
import type { FakeState } from './state';

export function authorize(state: FakeState, url: URL, res: http.ServerResponse, devPages: boolean) {
  const redirectUri = url.searchParams.get('redirect_uri');
  const team = state.teams.get(url.searchParams.get('team') ?? '');
  if (
    devPages &&
    !url.searchParams.get('team') &&
    redirectUri &&
    url.searchParams.get('client_id') === state.clientId
  ) {
    res
      .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end(page('Install the agent platform', workspaceChoice(state, url)));
    return;
  }
  if (!redirectUri || url.searchParams.get('client_id') !== state.clientId || !team) {
    res
      .writeHead(400, { 'content-type': 'text/plain' })
      .end('bad authorize request (client_id, redirect_uri and a known team are needed)');
    return;
  }
  const back = new URL(redirectUri);
  if (url.searchParams.get('deny') === '1') {
    back.searchParams.set('error', 'access_denied');
  } else {
    const code = `code-${randomUpper(20)}`;
    state.codes.set(code, {
      teamId: team.teamId,
      redirectUri,
      scopes: (url.searchParams.get('scope') ?? '').split(',').filter(Boolean),
    });
    back.searchParams.set('code', code);
  }
  back.searchParams.set('state', url.searchParams.get('state') ?? '');
  res.writeHead(302, { location: back.toString() }).end();
}

/** The page's body: a button per workspace that approves there, and one that cancels. */
function workspaceChoice(state: FakeState, url: URL): string {
  const choice = (params: Record<string, string>) => {
    const u = new URL(url);
    for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
    return `${u.pathname}${u.search}`;
  };
  const first = state.teams.keys().next().value ?? '';
  return (
    `<p>The agent platform asks to be installed with the scopes <code>${html(url.searchParams.get('scope') ?? '')}</code>.</p>` +
    [...state.teams.values()]
      .map((t) => `<a class="button" href="${html(choice({ team: t.teamId }))}">Allow in ${html(t.teamName)}</a>`)
      .join('') +
    `<a class="button" href="${html(choice({ team: first, deny: '1' }))}">Cancel</a>`
  );
}
