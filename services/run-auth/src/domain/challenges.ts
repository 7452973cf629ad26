import { createChallenge, verifySolution } from 'altcha-lib/v1';
import { type AppForAuth, ChallengeSolution } from '@platform/contracts';
import { AppError, tryAgainShortly } from '@platform/problems';
import { getLogger } from '@platform/logger';
import type { AppDirectory } from '../data/app-directory';
import type { ChallengeStore } from '../data/challenge.store';
import { UpstreamFailure, type ChallengeUpstream, type UpstreamAnswer } from '../data/challenge-upstream';
import { originAllowed } from './origin';

const log = getLogger('run-auth.challenges');

export interface ChallengeDeps {
  enabled: boolean;
  legacyEnabled: boolean;
  hmacKey: string;
  maxNumber: number;
  ttlSeconds: number;
  store: ChallengeStore;
  apps: AppDirectory;
  upstream?: ChallengeUpstream;
}

export interface Caller {
  ip?: string;
  origin?: string;
  userAgent?: string;
  acceptLanguage?: string;
}

/** The parameters a challenge carries in its salt (`<random>?expires=…&app=…&`). */
function saltParams(salt: string): Record<string, string> {
  const i = salt.indexOf('?');
  return i < 0 ? {} : Object.fromEntries(new URLSearchParams(salt.slice(i + 1)));
}

const NOT_ENABLED = 'Challenge service is not enabled or app not found';
const notFound = () => new AppError('not_found', NOT_ENABLED);
const rateLimited = (retryAfter: number) =>
  new AppError('too_many_requests', 'Challenge service rate limit exceeded', {
    headers: { 'retry-after': String(retryAfter) },
  });
const upstreamError = () => new AppError('bad_gateway', 'Challenge upstream error');
const storeDown = () => tryAgainShortly('The challenge store is not reachable; try again shortly');

/** Redis is needed to count and to make solutions single-use: when it is down the challenge service fails closed (503). */
async function withStore<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof AppError) throw err;
    log.warn({ err: (err as Error).message }, 'challenge store unavailable');
    throw storeDown();
  }
}

async function limit(deps: ChallengeDeps, key: string) {
  const wait = await withStore(() => deps.store.hit(key));
  if (wait !== null) throw rateLimited(wait);
}

/** The checks every challenge endpoint makes, in order: enabled, rate limit (per app and IP), app exists and is a web_client, Origin allowed. */
async function admit(deps: ChallengeDeps, appId: string, caller: Caller): Promise<AppForAuth> {
  if (!deps.enabled) throw notFound();
  await limit(deps, `app:${appId}:${caller.ip ?? 'unknown'}`);
  const app = await deps.apps.get(appId);
  if (!app || !app.enabled || app.type !== 'web_client') throw notFound();
  if (!originAllowed(caller.origin, app.config.webClient?.allowedDomains ?? []))
    throw new AppError('forbidden', 'Origin not allowed');
  return app;
}

function forwardHeaders(caller: Caller, extra: Record<string, string | undefined> = {}) {
  return {
    'user-agent': caller.userAgent,
    'accept-language': caller.acceptLanguage,
    'x-forwarded-for': caller.ip,
    ...extra,
  };
}

/** Passes a provider answer through; its 429 is ours, any other failure is a 502. */
async function passThrough(call: () => Promise<UpstreamAnswer>): Promise<unknown> {
  let answer: UpstreamAnswer;
  try {
    answer = await call();
  } catch (err) {
    if (err instanceof UpstreamFailure) {
      log.warn({ err: err.message }, 'challenge provider failed');
      throw upstreamError();
    }
    throw err;
  }
  if (answer.status === 429) throw rateLimited(1);
  if (answer.status < 200 || answer.status >= 300 || typeof answer.body !== 'object' || answer.body === null) {
    log.warn({ status: answer.status }, 'challenge provider refused');
    throw upstreamError();
  }
  return answer.body;
}

async function issueLocal(deps: ChallengeDeps, params: Record<string, string>) {
  const expiresAt = Date.now() + deps.ttlSeconds * 1000;
  const challenge = await createChallenge({
    hmacKey: deps.hmacKey,
    maxNumber: deps.maxNumber,
    expires: new Date(expiresAt),
    params,
  });
  await withStore(() => deps.store.remember(challenge.challenge, deps.ttlSeconds));
  return { ...challenge, expiresAt: Math.floor(expiresAt / 1000) * 1000 };
}

export async function issueChallenge(
  deps: ChallengeDeps,
  appId: string,
  endpointClass: string | undefined,
  caller: Caller,
) {
  await admit(deps, appId, caller);
  if (deps.upstream)
    return passThrough(() =>
      deps.upstream!.getChallenge(forwardHeaders(caller, { 'x-endpoint-class': endpointClass })),
    );
  return issueLocal(deps, { app: appId, ...(endpointClass ? { ec: endpointClass } : {}) });
}

export async function receiveInteraction(
  deps: ChallengeDeps,
  appId: string,
  body: Record<string, unknown>,
  caller: Caller,
) {
  await admit(deps, appId, caller);
  if (deps.upstream)
    return passThrough(() =>
      deps.upstream!.postChallenge(
        body,
        forwardHeaders(caller, { 'x-endpoint-class': body.endpointClass as string | undefined }),
      ),
    );
  const endpointClass = typeof body.endpointClass === 'string' ? body.endpointClass : undefined;
  const challenge = await issueLocal(deps, { app: appId, ...(endpointClass ? { ec: endpointClass } : {}) });
  return { received: true, receivedAt: new Date().toISOString(), challenge };
}

export async function issueLegacyChallenge(deps: ChallengeDeps, caller: Caller) {
  if (!deps.legacyEnabled) throw new AppError('not_found', 'Legacy PoW is not enabled');
  await limit(deps, `pow:${caller.ip ?? 'unknown'}`);
  if (deps.upstream) {
    const body = (await passThrough(() => deps.upstream!.getChallenge(forwardHeaders(caller)))) as Record<
      string,
      unknown
    >;
    const expires = typeof body.salt === 'string' ? Number(saltParams(body.salt as string).expires) : NaN;
    return Number.isFinite(expires) ? { ...body, expiresAt: expires * 1000 } : body;
  }
  return issueLocal(deps, {});
}

export type SolutionCheck =
  | { verified: true }
  | { verified: false; reason: 'invalid' | 'expired' | 'already_used' | 'wrong_app' };

/**
 * Checks a locally issued solution: HMAC signature and proof of work, expiry, that it was issued for `appId`
 * (legacy challenges carry no app and fit any), then spends it so it never verifies again.
 */
export async function checkLocalSolution(
  deps: ChallengeDeps,
  appId: string,
  solution: ChallengeSolution,
): Promise<SolutionCheck> {
  const params = saltParams(solution.salt);
  if (params.app !== undefined && params.app !== appId) return { verified: false, reason: 'wrong_app' };
  const expires = Number(params.expires);
  if (Number.isFinite(expires) && expires * 1000 < Date.now()) return { verified: false, reason: 'expired' };
  if (
    solution.algorithm !== 'SHA-256' ||
    !(await verifySolution({ ...solution, algorithm: 'SHA-256' }, deps.hmacKey, true))
  )
    return { verified: false, reason: 'invalid' };
  if (!(await withStore(() => deps.store.consume(solution.challenge))))
    return { verified: false, reason: 'already_used' };
  return { verified: true };
}

/** A solution from a request body or header: the object itself, `{payload: base64(JSON)}`, or base64(JSON). Null when it cannot be read. */
export function readSolution(input: unknown): ChallengeSolution | null {
  let value = input;
  if (typeof value === 'object' && value !== null && typeof (value as { payload?: unknown }).payload === 'string')
    value = (value as { payload: string }).payload;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(Buffer.from(value, 'base64').toString('utf8'));
    } catch {
      return null;
    }
  }
  const parsed = ChallengeSolution.safeParse(value);
  return parsed.success ? parsed.data : null;
}

export async function verifyChallengeSolution(deps: ChallengeDeps, appId: string, body: unknown, caller: Caller) {
  await admit(deps, appId, caller);
  if (deps.upstream) return passThrough(() => deps.upstream!.verify(body, forwardHeaders(caller)));
  const solution = readSolution(body);
  if (!solution)
    throw new AppError(
      'bad_request',
      'The payload is not a proof-of-work solution ({algorithm, challenge, number, salt, signature})',
    );
  return checkLocalSolution(deps, appId, solution);
}

/**
 * The bot check of anonymous sessions (when required): the `x-challenge-solution` header holds base64(JSON) of either
 * a local solution (checked and spent here) or `{payload}` from the provider's verify step (checked with the provider).
 * Missing or unreadable: 400; rejected: 403.
 */
export async function requireSolvedChallenge(
  deps: ChallengeDeps,
  appId: string,
  header: string | undefined,
): Promise<void> {
  if (!header)
    throw new AppError(
      'bad_request',
      'A solved challenge is required: send it base64-encoded in the x-challenge-solution header',
    );
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(header, 'base64').toString('utf8'));
  } catch {
    throw new AppError('bad_request', 'The x-challenge-solution header is not base64-encoded JSON');
  }
  if (
    deps.upstream &&
    typeof decoded === 'object' &&
    decoded !== null &&
    typeof (decoded as { payload?: unknown }).payload === 'string'
  ) {
    const body = (await passThrough(() =>
      deps.upstream!.verifySignature((decoded as { payload: string }).payload),
    )) as { verified?: unknown };
    if (body.verified !== true) throw new AppError('forbidden', 'The challenge solution was rejected');
    return;
  }
  const solution = readSolution(decoded);
  if (!solution)
    throw new AppError('bad_request', 'The x-challenge-solution header does not hold a proof-of-work solution');
  const result = await checkLocalSolution(deps, appId, solution);
  if (!result.verified) throw new AppError('forbidden', `The challenge solution was rejected (${result.reason})`);
}
