// What the fake knows: workspaces (teams) with their channels, bot tokens, recorded calls, posted messages and
// programmed failures; the authorization codes not yet exchanged; optionally kept in a JSON file across restarts.
import type http from 'node:http';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { randomUpper, send } from './http';

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

export interface Grant {
  revoked: boolean;
  scopes: string[];
}

export interface TeamState extends FakeTeam {
  tokens: Map<string, Grant>;
  calls: Array<{ method: string; params: Record<string, string>; at: string }>;
  messages: Array<{ channel: string; text: string; ts: string }>;
  failures: Array<{ method: string; error?: string; httpStatus?: number; remaining: number }>;
}

type SavedTeam = FakeTeam & { tokens: Array<[string, Grant]>; messages: TeamState['messages'] };

export class FakeState {
  readonly teams = new Map<string, TeamState>();
  readonly codes = new Map<string, { teamId: string; redirectUri: string; scopes: string[] }>();
  private tsCounter = 0;

  constructor(
    readonly clientId: string,
    readonly clientSecret: string,
    private readonly stateFile?: string,
  ) {
    if (stateFile && existsSync(stateFile)) {
      const saved = JSON.parse(readFileSync(stateFile, 'utf8')) as SavedTeam[];
      for (const t of saved) this.teams.set(t.teamId, { ...t, tokens: new Map(t.tokens), calls: [], failures: [] });
    }
  }

  /** Writes teams with their tokens and messages (stateFile), after every change. */
  save() {
    if (!this.stateFile) return;
    const out = [...this.teams.values()].map(({ calls: _c, failures: _f, tokens, messages, ...t }) => ({
      ...t,
      tokens: [...tokens],
      messages: messages.slice(-200),
    }));
    writeFileSync(this.stateFile, JSON.stringify(out, null, 2));
  }

  addTeam(input: Partial<FakeTeam>): TeamState {
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
    this.teams.set(teamId, t);
    this.save();
    return t;
  }

  teamOfToken(token: string | undefined): TeamState | undefined {
    if (!token) return undefined;
    for (const t of this.teams.values()) if (t.tokens.has(token)) return t;
    return undefined;
  }

  /** A message timestamp as the chat product makes them (seconds, then a counter). */
  nextTs(): string {
    return `${Math.floor(Date.now() / 1000)}.${String(++this.tsCounter).padStart(6, '0')}`;
  }
}

/** Answers a programmed failure for this call, if one is queued. */
export function failure(team: TeamState | undefined, method: string, res: http.ServerResponse): boolean {
  if (!team) return false;
  const f = team.failures.find((x) => x.method === method && x.remaining !== 0);
  if (!f) return false;
  if (f.remaining > 0) f.remaining--;
  if (f.httpStatus) res.writeHead(f.httpStatus, { 'content-type': 'text/plain' }).end('fake failure');
  else send(res, 200, { ok: false, error: f.error ?? 'fatal_error' });
  return true;
}
