import { Agent, request, errors as undiciErrors } from 'undici';
import { checkUrl, isAddressRefused, vettedLookup, type AddressPolicy } from '@platform/address-safety';
import { classifyStatus, parseRetryAfter } from '../domain/retry-policy';
import type { HttpPost, SendResult } from '../domain/transport';

export interface HttpSenderOptions {
  policy: AddressPolicy;
  hostOverrides?: Record<string, string>;
  timeoutMs: number;
  connectTimeoutMs: number;
  maxResponseBytes: number;
}

/**
 * POSTs a delivery. Address safety: a literal IP is judged from the URL before anything else; a host name is
 * resolved by the agent's `lookup`, which checks every answer and hands the socket only the vetted address, so
 * the connection goes exactly where the check said (no second DNS answer in between). Redirects are never
 * followed; timeouts are tight; at most `maxResponseBytes` of the answer are read.
 */
export function httpSender(opts: HttpSenderOptions) {
  const agent = new Agent({
    connect: {
      lookup: vettedLookup(opts.policy, { overrides: opts.hostOverrides }) as never,
      timeout: opts.connectTimeoutMs,
    },
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
    keepAliveTimeout: 4_000,
    connections: 64,
  });

  const post = async (p: HttpPost): Promise<SendResult> => {
    const started = Date.now();
    const timeoutMs = p.timeoutMs ?? opts.timeoutMs;
    const result = (r: Omit<SendResult, 'durationMs'>): SendResult => ({ ...r, durationMs: Date.now() - started });
    const target = checkUrl(p.url, opts.policy);
    if (target.kind === 'invalid')
      return result({ kind: 'refused', statusCode: null, error: `refused: ${target.reason}` });
    if (target.kind === 'literal' && !target.verdict.allowed) {
      return result({
        kind: 'refused',
        statusCode: null,
        error: `refused before connecting: ${target.verdict.reason}`,
      });
    }
    try {
      const res = await request(p.url, {
        method: 'POST',
        headers: p.headers,
        body: p.body,
        dispatcher: agent,
        signal: AbortSignal.timeout(timeoutMs),
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      await readCapped(res.body, opts.maxResponseBytes);
      const kind = classifyStatus(res.statusCode);
      const header = (name: string) => {
        const v = res.headers[name];
        return Array.isArray(v) ? v[0] : v;
      };
      let error: string | null = null;
      if (kind !== 'delivered') {
        error =
          res.statusCode >= 300 && res.statusCode < 400
            ? `the receiver answered ${res.statusCode} (a redirect); redirects are not followed`
            : `the receiver answered ${res.statusCode}`;
      }
      return result({
        kind,
        statusCode: res.statusCode,
        error,
        retryAfterMs: kind === 'retryable' ? parseRetryAfter(header('retry-after')) : undefined,
      });
    } catch (err) {
      if (isAddressRefused(err))
        return result({ kind: 'refused', statusCode: null, error: `refused before connecting: ${refusal(err)}` });
      return result({ kind: 'retryable', statusCode: null, error: describeNetworkError(err, timeoutMs) });
    }
  };

  return { post, close: () => agent.close() };
}

function refusal(err: unknown): string {
  for (
    let e = err as { message?: string; cause?: unknown } | undefined, i = 0;
    e && i < 5;
    e = e.cause as typeof e, i++
  ) {
    if ((e as { code?: string }).code === 'EADDRREFUSED_POLICY') return e.message ?? 'unsafe address';
  }
  return (err as Error).message;
}

/** Reads the answer up to `limit` bytes and drops the rest, so a huge or endless answer costs nothing. */
async function readCapped(body: AsyncIterable<Buffer> & { destroy(): void }, limit: number): Promise<void> {
  let seen = 0;
  try {
    for await (const chunk of body) {
      seen += chunk.length;
      if (seen > limit) break;
    }
  } catch {
    /* the status already decided the attempt */
  } finally {
    body.destroy();
  }
}

function describeNetworkError(err: unknown, timeoutMs: number): string {
  const e = err as { name?: string; code?: string; message?: string; cause?: { code?: string; message?: string } };
  if (
    e.name === 'TimeoutError' ||
    e.name === 'AbortError' ||
    err instanceof undiciErrors.HeadersTimeoutError ||
    err instanceof undiciErrors.BodyTimeoutError ||
    e.code === 'UND_ERR_HEADERS_TIMEOUT' ||
    e.code === 'UND_ERR_BODY_TIMEOUT'
  ) {
    return `timed out after ${timeoutMs} ms`;
  }
  if (err instanceof undiciErrors.ConnectTimeoutError || e.code === 'UND_ERR_CONNECT_TIMEOUT')
    return 'timed out while connecting';
  const code = e.code ?? e.cause?.code;
  const message = e.message || e.cause?.message || 'network error';
  return code ? `network error ${code}: ${message}` : `network error: ${message}`;
}
