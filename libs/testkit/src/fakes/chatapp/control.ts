// `/_control/…`: how tests (in other jest workers) program and inspect the fake over HTTP (see `chatappFake()`).
import type http from 'node:http';
import { readBody, send } from './http';
import type { FakeChannel, FakeState, FakeTeam } from './state';

export async function control(
  state: FakeState,
  path: string[],
  method: string,
  req: http.IncomingMessage,
  res: http.ServerResponse,
) {
  const body = method === 'POST' ? await readBody(req) : {};
  if (path[0] === 'teams' && path.length === 1 && method === 'POST') return createTeam(state, body, res);
  const team = state.teams.get(path[1] ?? '');
  if (path[0] !== 'teams' || !team) return send(res, 404, { error: 'unknown team' });
  const what = path[2];
  if (!what && method === 'GET') {
    return send(res, 200, {
      teamId: team.teamId,
      tokens: [...team.tokens.values()].map((g) => ({ revoked: g.revoked, scopes: g.scopes })),
    });
  }
  if (what === 'calls' && method === 'GET') return send(res, 200, { calls: team.calls });
  if (what === 'messages' && method === 'GET') return send(res, 200, { messages: team.messages });
  if (what === 'failures' && method === 'POST') {
    const times = body.times !== undefined ? Number(body.times) : 1;
    team.failures.push({
      method: body.method!,
      error: body.error,
      httpStatus: body.httpStatus ? Number(body.httpStatus) : undefined,
      remaining: times < 0 ? -1 : times,
    });
    return send(res, 201, { ok: true });
  }
  if (what === 'failures' && method === 'DELETE') {
    team.failures = [];
    return send(res, 200, { ok: true });
  }
  return send(res, 404, { error: 'unknown control route' });
}

function createTeam(state: FakeState, body: Record<string, string>, res: http.ServerResponse) {
  const input = body as Partial<Record<keyof FakeTeam, string>>;
  const t = state.addTeam({
    teamId: input.teamId,
    teamName: input.teamName,
    domain: input.domain,
    channels: input.channels ? (JSON.parse(input.channels) as FakeChannel[]) : undefined,
    scopes: input.scopes ? (JSON.parse(input.scopes) as string[]) : undefined,
  });
  return send(res, 201, { teamId: t.teamId, teamName: t.teamName, domain: t.domain, channels: t.channels });
}
