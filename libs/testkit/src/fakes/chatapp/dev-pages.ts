// The pages for a person trying the integration locally (npm start; never in production): `/` shows workspaces,
// channels and posted messages, `/app_redirect` lets the person play the chat user who completes a link, and
// `/local/result` and `/local/link` stand in for the management UI.
import type http from 'node:http';
import { html, readBody, sendPage } from './http';
import type { FakeState, TeamState } from './state';

export interface DevPagesOptions {
  /** Base URL of the gateway, for the commands the pages suggest. */
  gatewayUrl: string;
  /** Plays our bot side: completes a link session for a chat user (the local stack calls the chatapp service). */
  completeLinkSession?(input: {
    sessionToken: string;
    chatappTeamId: string;
    chatappUserId: string;
    chatappUsername?: string;
  }): Promise<unknown>;
}

type Page = (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void> | void;

/** The development page at this path, or undefined for any other path. */
export function devPage(state: FakeState, dev: DevPagesOptions, url: URL, method: string): Page | undefined {
  const curl = (m: string, path: string, json?: unknown) =>
    `curl -X ${m} -H "Authorization: Bearer $ADMIN_TOKEN"${json ? ` -H 'content-type: application/json' -d '${JSON.stringify(json)}'` : ''} ${dev.gatewayUrl}${path}`;
  const route = `${method} ${url.pathname}`;
  if (route === 'GET /') return (_req, res) => overview(state, curl, res);
  if (route === 'GET /local/result') return (_req, res) => installResult(url, curl, res);
  if (route === 'GET /local/link') {
    return (_req, res) => {
      const token = url.searchParams.get('token') ?? '';
      sendPage(
        res,
        200,
        'Link your chat account',
        `<p>Stand-in for the management UI's link page. A signed-in platform user completes the link with:</p><pre>${html(curl('POST', '/work-apps/chatapp/users/link/verify-token', { token, userId: 'local-user' }))}</pre>`,
      );
    };
  }
  if (route === 'GET /app_redirect') return (_req, res) => chatUserForm(state, url, res);
  if (route === 'POST /app_redirect') return (req, res) => completeLink(dev, req, res);
  return undefined;
}

type Curl = (m: string, path: string, json?: unknown) => string;

function overview(state: FakeState, curl: Curl, res: http.ServerResponse) {
  const team = (t: TeamState) => {
    const channels = t.channels
      .map((c) => `<li><code>${html(c.id)}</code> #${html(c.name)}${c.isPrivate ? ' (private)' : ''}</li>`)
      .join('');
    const messages =
      t.messages
        .slice(-20)
        .reverse()
        .map((m) => `<li><code>${html(m.channel)}</code> ${html(m.text)}</li>`)
        .join('') || '<li>none yet</li>';
    const installed = [...t.tokens.values()].some((g) => !g.revoked);
    return `<h2>${html(t.teamName)} <code>${html(t.teamId)}</code>${installed ? ' (app installed)' : ''}</h2><p>Channels:</p><ul>${channels}</ul><p>Latest messages posted by the app:</p><ul>${messages}</ul>`;
  };
  const mint = curl('POST', '/work-apps/chatapp/install-links', { tenantId: 'acme', projectId: 'demo' });
  sendPage(
    res,
    200,
    'Chat workspaces',
    `<p>Install the app: mint an install link with <code>${html(mint)}</code> and open its <code>data.url</code></p>${[...state.teams.values()].map(team).join('')}`,
  );
}

function installResult(url: URL, curl: Curl, res: http.ServerResponse) {
  const rows = [...url.searchParams].map(([k, v]) => `<li><code>${html(k)}</code> = ${html(v)}</li>`).join('');
  const teamId = url.searchParams.get('teamId');
  const route = { agentConfig: { agentId: 'support-bot', projectId: url.searchParams.get('project_id') ?? 'demo' } };
  const next = teamId
    ? `<p>Next, route a channel to an agent:</p><pre>${html(curl('PUT', `/work-apps/chatapp/workspaces/${teamId}/channels/CSUPPORT01/settings`, route))}</pre><p>See the workspaces and messages at <a href="/">the chat product's overview</a>.</p>`
    : '';
  sendPage(
    res,
    200,
    url.searchParams.get('success') === 'true' ? 'Installed' : 'Not installed',
    `<p>Stand-in for the management UI's result page. The platform sent:</p><ul>${rows}</ul>${next}`,
  );
}

function chatUserForm(state: FakeState, url: URL, res: http.ServerResponse) {
  const session = url.searchParams.get('session') ?? '';
  const options = [...state.teams.values()]
    .map((t) => `<option value="${html(t.teamId)}">${html(t.teamName)}</option>`)
    .join('');
  sendPage(
    res,
    200,
    'Talk to the agent platform bot',
    `<p>Here the chat user would open the bot's conversation, and the bot would finish the link. Play that user:</p><form method="post" action="/app_redirect"><input type="hidden" name="session" value="${html(session)}"><p><label>Workspace <select name="team">${options}</select></label></p><p><label>Chat user id <input name="user" value="ULOCAL0001" pattern="U[A-Z0-9]+"></label></p><p><label>Chat user name <input name="username" value="local.user"></label></p><button type="submit">Link my chat account</button></form>`,
  );
}

async function completeLink(dev: DevPagesOptions, req: http.IncomingMessage, res: http.ServerResponse) {
  const form = await readBody(req);
  if (!dev.completeLinkSession) {
    sendPage(res, 501, 'Not available', '<p>Nobody plays the bot side here.</p>');
    return;
  }
  const result = await dev.completeLinkSession({
    sessionToken: form.session ?? '',
    chatappTeamId: form.team ?? '',
    chatappUserId: form.user ?? '',
    chatappUsername: form.username || undefined,
  });
  sendPage(
    res,
    200,
    'Link answered',
    `<p>The chatapp service answered:</p><pre>${html(JSON.stringify(result, null, 2))}</pre>`,
  );
}
