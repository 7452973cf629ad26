/** A hosted challenge provider speaking the ALTCHA Sentinel shape (/v1/challenge, /v1/verify, /v1/verify/signature). */
export interface UpstreamAnswer {
  status: number;
  body: unknown;
}

export class UpstreamFailure extends Error {}

export function challengeUpstream(baseUrl: string, timeoutMs: number) {
  const base = baseUrl.replace(/\/+$/, '');
  const call = async (
    method: 'GET' | 'POST',
    path: string,
    opts: { body?: unknown; headers?: Record<string, string | undefined> },
  ): Promise<UpstreamAnswer> => {
    const headers: Record<string, string> = { accept: 'application/json' };
    for (const [k, v] of Object.entries(opts.headers ?? {})) if (v) headers[k] = v;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(base + path, {
        method,
        headers,
        body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
        signal: AbortSignal.timeout(timeoutMs),
        redirect: 'error',
      });
    } catch (err) {
      throw new UpstreamFailure(`challenge provider unreachable: ${(err as Error).message}`);
    }
    const text = await res.text().catch(() => '');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new UpstreamFailure(`challenge provider answered ${res.status} with a body that is not JSON`);
    }
    return { status: res.status, body };
  };
  return {
    getChallenge: (headers: Record<string, string | undefined>) => call('GET', '/v1/challenge', { headers }),
    postChallenge: (body: unknown, headers: Record<string, string | undefined>) =>
      call('POST', '/v1/challenge', { body, headers }),
    verify: (body: unknown, headers: Record<string, string | undefined>) =>
      call('POST', '/v1/verify', { body, headers }),
    verifySignature: (payload: string) => call('POST', '/v1/verify/signature', { body: { payload } }),
  };
}
export type ChallengeUpstream = ReturnType<typeof challengeUpstream>;
